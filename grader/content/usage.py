"""Usage errors in the reader's language (``usage.toml``).

click words its own errors ("Missing option '--out'.", "'x' is not one of 'en', 'zh'.") in English through
module-level ``gettext`` calls that only a compiled catalog on the locale path could change. Rather than
patch click's modules, the command line's exit boundary gives a failed parse to ``localized``: it names
click's message by matching click's English wording (kept in ``usage.toml`` next to its Chinese) and
returns an error that shows the whole frame (usage line, pointer to --help, the message) in that language.
A message click words in a way the file does not know stays as click wrote it.
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass

import click

from grader.content.loader import bilingual_texts, load_toml
from grader.errors import ContentError, UsageError
from grader.paths import CONTENT_DIR

USAGE_TEXTS = CONTENT_DIR / "usage.toml"
_NESTED = {"message", "more"}  # placeholders that hold another click message
_WORD = "kind"  # a placeholder that holds one of click's English names ("integer", "Path")


@dataclass(frozen=True)
class Pattern:
    """One click message: its English wording as a regular expression, and its texts."""

    key: str
    regex: re.Pattern
    texts: dict[str, str]


@functools.cache
def _texts() -> dict[str, dict[str, dict[str, str]]]:
    data = load_toml(USAGE_TEXTS)
    return {table: bilingual_texts(data.get(table, {}), USAGE_TEXTS, within=f"{table}.")
            for table in ("frame", "click", "word", "message")}


@functools.cache
def _patterns() -> tuple[Pattern, ...]:
    """click's messages, the most specific wording first."""
    patterns = []
    for key, texts in _texts()["click"].items():
        parts = []
        for literal, field, _, _ in string.Formatter().parse(texts["en"]):
            parts.append(re.escape(literal))
            if field:
                parts.append(f"(?P<{field}>.+?)" if field != _WORD else
                             "(?P<kind>" + "|".join(re.escape(word["en"]) for word in _words()) + ")")
        fields = {field for _, field, _, _ in string.Formatter().parse(texts["en"]) if field}
        rank = (bool(fields & _NESTED), len(re.sub(r"\{[^}]*\}", "", texts["en"])))
        patterns.append((rank, Pattern(key, re.compile("".join(parts), re.S), texts)))
    # a frame around another message first ("Invalid value for '--jobs': ..."), then the longest fixed text
    return tuple(pattern for _, pattern in sorted(patterns, key=lambda item: item[0], reverse=True))


def _words() -> list[dict[str, str]]:
    return sorted(_texts()["word"].values(), key=lambda word: -len(word["en"]))


def text(table: str, key: str, lang: str, **fields) -> str:
    """A text of ``usage.toml`` (``frame``, ``message``) in ``lang`` with its placeholders filled."""
    texts = _texts()[table]
    if key not in texts:
        raise ContentError(f"{USAGE_TEXTS}: no text {table}.{key}")
    return texts[key].get(lang, texts[key]["en"]).format(**fields)


def usage_error(key: str, **fields) -> UsageError:
    """The command line's own usage error ``key`` of ``usage.toml``, written in every language."""
    return UsageError(texts={lang: text("message", key, lang, **fields) for lang in ("en", "zh")})


def translate(message: str, lang: str) -> str:
    """click's English ``message`` in ``lang``; a wording ``usage.toml`` does not know stays as it is."""
    if lang == "en":
        return message
    for pattern in _patterns():
        found = pattern.regex.fullmatch(message)
        if found:
            fields = {name: _field(name, value, lang) for name, value in found.groupdict().items()}
            return pattern.texts[lang].format(**fields)
    return message


def _field(name: str, value: str, lang: str) -> str:
    if name in _NESTED:
        return translate(value, lang)
    if name == _WORD:
        return next(word[lang] for word in _words() if word["en"] == value)
    return value


class LocalizedUsage(click.UsageError):
    """A usage error that shows its frame and message in ``lang``."""

    def __init__(self, error: click.ClickException, lang: str) -> None:
        super().__init__(_message(error, lang), getattr(error, "ctx", None))
        self.exit_code = error.exit_code
        self.lang = lang
        self.is_usage = isinstance(error, click.UsageError)

    def show(self, file=None) -> None:
        lang = self.lang
        if self.ctx is not None and self.is_usage:
            usage = self.ctx.get_usage()
            usage = usage.replace(text("frame", "usage", "en") + " ", text("frame", "usage", lang), 1)
            usage = usage.replace(text("frame", "options", "en"), text("frame", "options", lang))
            hint = ""
            if self.ctx.command.get_help_option(self.ctx) is not None:
                option = max(self.ctx.command.get_help_option_names(self.ctx), key=len)  # --help, as click
                hint = text("frame", "try_help", lang, command=self.ctx.command_path, option=option) + "\n"
            click.echo(f"{usage}\n{hint}", file=file, err=True, color=self.ctx.color)
        click.echo(text("frame", "error", lang, message=self.message), file=file, err=True,
                   color=self.ctx.color if self.ctx else None)


def _message(error: click.ClickException, lang: str) -> str:
    """The message of ``error`` in ``lang``: its own translation when it carries one (a parameter type of
    this project), else click's wording translated. For a bad value, click's frame around the message."""
    own = getattr(error, "texts", None) or {}
    if isinstance(error, click.BadParameter) and own:
        inner = own.get(lang) or error.message
        hint = error.param_hint if isinstance(error.param_hint, str) else None
        if hint is None and error.param is not None:
            hint = error.param.get_error_hint(error.ctx)
        key = "invalid_value_for" if hint else "invalid_value"
        return _texts()["click"][key][lang].format(hint=hint, message=inner)
    return translate(error.format_message(), lang)


class LocalizedBadParameter(click.BadParameter):
    """A bad value of this project's own parameter types, written in every language (``usage.toml``)."""

    def __init__(self, key: str, *, param=None, ctx=None, **fields) -> None:
        self.texts = {lang: text("message", key, lang, **fields) for lang in ("en", "zh")}
        super().__init__(self.texts["en"], ctx=ctx, param=param)


def localized(error: click.ClickException, lang: str) -> click.ClickException:
    """``error`` ready to show in ``lang`` (English errors are click's own, shown as they are; a command
    called bare that shows its help instead of an error keeps click's own showing)."""
    if lang == "en" or isinstance(error, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        return error
    return LocalizedUsage(error, lang)
