"""Text a student controls, made safe where it leaves the trusted side.

Student-controlled text is every file and folder name under SUBMISSIONS,
everything the submission prints or raises, and every line of a notebook.
Before such text reaches a result, the journal or an output it goes through
``clean_text`` (or ``clean_name`` for a name):

- lone surrogates (from a ``"\\ud800"`` in an exception message, or bytes of a
  file name that are not UTF-8) become U+FFFD, so the text can be written as
  UTF-8 at all; an undecodable name is *shown* as undecodable;
- terminal escape sequences (``ESC [ 2 J``, OSC titles and hyperlinks...) are
  removed whole, and every other control character, C0 or C1, becomes U+FFFD,
  except newline and tab; ``CR LF`` and a lone ``CR`` become a newline, so no
  line can be overwritten on a terminal;
- the bidirectional overrides and isolates that reorder what a reader sees
  (``U+202A``-``U+202E``, ``U+2066``-``U+2069``) are removed.

Then each output format escapes what is special to it: ``csv_cell`` (no cell
may start a spreadsheet formula, the way OWASP recommends), ``markdown_inline``
(no live link, image, HTML or table break), ``html_text``, and the renderers'
own XML and rich-markup escaping. Foundation module: imports nothing from ``grader``.
"""

from __future__ import annotations

import dataclasses
import html
import re
import unicodedata
from typing import Any

REPLACEMENT = "\ufffd"

# ECMA-48 sequences, 7-bit (ESC ...) and 8-bit (C1) forms: CSI ... final byte;
# OSC, DCS, SOS, PM, APC ... up to their terminator (BEL or ST) or the line's end;
# and the two-byte ESC sequences.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|(?=\n)|\Z)"
    r"|\x1b[ -/]*[0-~]?",
    re.DOTALL,
)
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_REORDERING = re.compile("[\u202a-\u202e\u2066-\u2069]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAKS = re.compile("\r\n?")
# every character one of the patterns above starts with (escapes start with ESC or a C1 control)
_NEEDS_CLEANING = re.compile("[\ud800-\udfff\u202a-\u202e\u2066-\u2069\x00-\x08\x0b-\x1f\x7f-\x9f]")

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP: cells that a spreadsheet may run
_MARKDOWN_ACTIVE = re.compile(r"([\\`*_{}\[\]()#!|~$])")  # after HTML escaping, which takes < > &
_AUTOLINK = re.compile(r"(://|www\.)", re.IGNORECASE)


def clean_text(text: Any) -> str:
    """``text`` with no lone surrogate, escape sequence, reordering mark or control character but newline and tab."""
    text = text if isinstance(text, str) else str(text)
    if text.isascii() and text.isprintable():
        return text  # the common case, at no cost
    if not _NEEDS_CLEANING.search(text):
        return text  # newlines, tabs and printable Unicode only (most messages): one scan
    text = _PAIR.sub(_joined_pair, text)
    text = _SURROGATE.sub(REPLACEMENT, text)
    text = _LINE_BREAKS.sub("\n", text)
    text = _ESCAPES.sub("", text)
    text = _REORDERING.sub("", text)
    return _CONTROL.sub(REPLACEMENT, text)


def clean_line(text: Any) -> str:
    """``clean_text`` on one line: newlines and tabs become spaces."""
    return clean_text(text).replace("\n", " ").replace("\t", " ")


def decode_os_name(name: str) -> str:
    """A name as ``os`` returns it (undecodable bytes kept as surrogate escapes) as text, U+FFFD for those bytes."""
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that no byte produced: already text
        return name


def clean_name(name: str) -> str:
    """A file or folder name as it may be shown and used as a student id.

    Undecodable bytes, control characters (newline and tab included) and
    reordering marks each become U+FFFD, so a name that needed cleaning still
    looks like one; the result is in Unicode normal form C.
    """
    name = decode_os_name(name)
    name = _SURROGATE.sub(REPLACEMENT, name)
    name = _REORDERING.sub(REPLACEMENT, name)
    name = re.sub("[\x00-\x1f\x7f-\x9f]", REPLACEMENT, name)
    return unicodedata.normalize("NFC", name)


def clean_strings(value: Any) -> Any:
    """``value`` (JSON-like data: dicts, lists, tuples, strings, numbers, or frozen dataclasses of them, such as
    a ``SubmissionResult``) with every string through ``clean_text``.

    A part with nothing to clean is returned itself, not a copy: a result of 35 checks is mostly clean text,
    and rebuilding all of it cost a batch several milliseconds a submission.
    """
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        cleaned = {clean_text(key) if isinstance(key, str) else key: clean_strings(item) for key, item in value.items()}
        return value if _same(cleaned.items(), value.items()) else cleaned
    if isinstance(value, (list, tuple)):
        cleaned = [clean_strings(item) for item in value]
        return value if _same(cleaned, value) else type(value)(cleaned)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [field.name for field in dataclasses.fields(value) if field.init]
        cleaned = {name: clean_strings(getattr(value, name)) for name in names}
        if _same(cleaned.values(), (getattr(value, name) for name in names)):
            return value
        return dataclasses.replace(value, **cleaned)
    return value


def _same(cleaned, original) -> bool:
    """Whether every part cleaned is the very part it came from (pairs compare part by part)."""
    return all(new is old or (type(new) is tuple and type(old) is tuple and _same(new, old))
               for new, old in zip(cleaned, original))


def csv_cell(text: Any) -> str:
    """A text cell of a CSV file that no spreadsheet runs as a formula.

    One line; a cell whose first visible character would start a formula
    (``= + - @``, tab, carriage return) gets a leading single quote, which
    spreadsheets read as "this is text" (OWASP, CSV injection).
    """
    cell = clean_line(text)
    if cell.lstrip().startswith(FORMULA_STARTS) or cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def needs_quotes(cell: str) -> bool:
    """Whether a CSV cell should be quoted although the comma dialect does not need it.

    A spreadsheet set to ``;`` as separator would split such a cell, and a
    formula could start right after the ``;``; a neutralized cell is quoted
    too, as OWASP recommends.
    """
    return ";" in cell or cell.startswith("'")


def markdown_inline(text: Any) -> str:
    """Student text inert in Markdown, on one line: no HTML, link, image, emphasis, table break or autolink."""
    line = html.escape(clean_line(text), quote=False)
    line = _MARKDOWN_ACTIVE.sub(r"\\\1", line)
    return _AUTOLINK.sub(lambda match: match.group(0)[:-1] + "\u200b" + match.group(0)[-1], line)


def html_text(text: Any) -> str:
    """Student text as HTML text or an attribute value: cleaned, then escaped (quotes too)."""
    return html.escape(clean_text(text), quote=True)


def markdown_code_block(text: Any) -> str:
    """Student text for the inside of a fenced code block: it cannot close the fence."""
    return clean_text(text).replace("```", "'''").replace("~~~", "'''")


def _joined_pair(match: re.Match) -> str:
    return match.group(0).encode("utf-16", "surrogatepass").decode("utf-16")
