"""Help pages in the reader's language (``help.toml``).

Every verb's description, short line and option texts live in ``help.toml`` in
both languages, keyed by the verb and each parameter's name; the verbs' modules
declare only the options themselves. ``localized_command`` gives a copy of a
verb whose texts are those of one language, and ``LocalizedContext`` formats its
page with click's own words (usage line, headings, "[default: ...]", the --help
and --version lines) in that language too. A parameter the file does not know
keeps what its module says (a test holds that none is missing).
"""

from __future__ import annotations

import copy
import functools
import re

import click

from grader.content.linebreak import wrapped
from grader.content.loader import bilingual_texts, load_toml
from grader.paths import CONTENT_DIR

HELP_TEXTS = CONTENT_DIR / "help.toml"
LANG_KEY = "mha.lang"  # ctx.meta: the language the command line asked for, shared by the nested contexts
ROOT = "mha"  # the root group's entry in help.toml
_HEADINGS = {"Options": "options", "Commands": "commands", "Arguments": "arguments"}
_EXTRA = re.compile(r"^(?P<help>.*?) {0,2}\[(?P<extra>[^\[\]]*)\]$", re.S)  # click's "help  [default: 1; x>=1]"


@functools.cache
def _texts() -> dict[str, dict[str, str]]:
    data = load_toml(HELP_TEXTS)
    return bilingual_texts({key: value for key, value in data.items() if key != "schema_version"}, HELP_TEXTS)


def help_text(key: str, lang: str) -> str | None:
    """The text ``key`` of ``help.toml`` in ``lang``, or None where the file has none."""
    texts = _texts().get(key)
    return texts[lang] if texts else None


def parameter_keys(verb: str, name: str) -> tuple[str, str]:
    """Where a parameter's help may be: the verb's own entry, then the options several verbs share."""
    return f"verb.{verb}.options.{name}", f"shared.{name}"


def localized_command(command: click.Command, verb: str, lang: str) -> click.Command:
    """A copy of ``command`` (the verb ``verb``) whose help page is written in ``lang``."""
    localized = copy.copy(command)
    localized.help = help_text(f"verb.{verb}.about", lang) or command.help
    localized.short_help = help_text(f"verb.{verb}.short", lang) or command.short_help
    localized.params = [_localized_parameter(parameter, verb, lang) for parameter in command.params]
    localized.context_class = LocalizedContext
    return localized


def _localized_parameter(parameter: click.Parameter, verb: str, lang: str) -> click.Parameter:
    if not isinstance(parameter, click.Option):
        return parameter  # click shows arguments only in the usage line, by their names
    found = next((key for key in parameter_keys(verb, parameter.name) if help_text(f"{key}.help", lang)), None)
    if found is None:
        return parameter
    localized = copy.copy(parameter)
    localized.help = help_text(f"{found}.help", lang)
    shown_default = help_text(f"{found}.default", lang)
    if shown_default:
        localized.show_default = shown_default
    elif lang != "en" and parameter.is_bool_flag and parameter.secondary_opts and parameter.show_default is True:
        # click shows the default of --hints/--no-hints as "hints", an English word: show the flag itself
        localized.show_default = (parameter.opts if parameter.default else parameter.secondary_opts)[-1]
    return localized


def help_language(ctx: click.Context | None) -> str:
    """The language of the help page ``ctx`` shows: the command line's ``--lang``, else the locale's (also
    where a command is looked up with no context, as ``group.get_command(None, name)`` may be)."""
    from grader.i18n import resolve_language

    return (ctx.meta.get(LANG_KEY) if ctx is not None else None) or resolve_language(None)


class LocalizedFormatter(click.HelpFormatter):
    """click's formatter with its own words in ``lang``, and Chinese wrapped by display width (``wrapped``)."""

    def __init__(self, *, lang: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lang = lang

    def _word(self, key: str, **fields) -> str:
        return help_text(f"click.{key}", self.lang).format(**fields)

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        if prefix is None:
            prefix = self._word("usage")
        super().write_usage(prog, args.replace("[OPTIONS]", self._word("options_metavar")), prefix)

    def write_heading(self, heading: str) -> None:
        if heading not in _HEADINGS:
            return super().write_heading(heading)
        self.write(f"{'':>{self.current_indent}}{self._word(_HEADINGS[heading])}\n")

    def write_text(self, text: str) -> None:
        if self.lang == "en":
            return super().write_text(text)
        indent = " " * self.current_indent
        self.write("\n\n".join("\n".join(indent + line for line in paragraph)
                               for paragraph in wrapped(text, self.width - self.current_indent)) + "\n")

    def write_dl(self, rows, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = [(term, self._definition(definition)) for term, definition in rows]
        if self.lang == "en":
            return super().write_dl(rows, col_max, col_spacing)
        first_column = min(max((len(term) for term, _ in rows), default=0), col_max) + col_spacing
        for term, definition in rows:
            self.write(f"{'':>{self.current_indent}}{term}")
            if len(term) <= first_column - col_spacing:
                self.write(" " * (first_column - len(term)))
            else:
                self.write("\n" + " " * (first_column + self.current_indent))
            lines = [line for paragraph in wrapped(definition, max(self.width - first_column - 2, 10))
                     for line in paragraph] or [""]
            self.write("\n".join([lines[0], *(" " * (first_column + self.current_indent) + line
                                              for line in lines[1:])]) + "\n")

    def _definition(self, definition: str) -> str:
        """An option's line with click's phrases ("Show this message and exit.", "default: 1") in ``lang``."""
        known = {texts["en"]: texts[self.lang] for key, texts in _texts().items() if key.startswith("click.phrase.")}
        if definition in known:
            return known[definition]
        found = _EXTRA.match(definition)
        if not found or self.lang == "en":
            return definition
        extras = [self._extra(part) for part in found["extra"].split("; ")]
        return f"{known.get(found['help'], found['help'])}  [{self._word('separator').join(extras)}]"

    def _extra(self, part: str) -> str:
        if part.startswith("default: "):
            default = part.removeprefix("default: ")
            if default.startswith("(") and default.endswith(")"):  # a text in place of the value: click's brackets
                default = default[1:-1]
            return self._word("default", default=default)
        if part == "required":
            return self._word("required")
        return part  # a range such as x>=1, written in symbols


class LocalizedContext(click.Context):
    """A context whose help page is formatted in the command line's language."""

    def make_formatter(self) -> click.HelpFormatter:
        return LocalizedFormatter(lang=help_language(self), width=self.terminal_width,
                                  max_width=self.max_content_width)

