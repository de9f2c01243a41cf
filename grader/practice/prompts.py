"""How a quiz reads answers: arrow-key prompts in a terminal, typed lines otherwise.

Both prompters return the answer as text that ``grader.practice.answers`` reads
(a letter for a choice, ``A, C`` for several, the typed number or shape), or
None when the user stops (end of input, Ctrl-C in a prompt).
"""

from __future__ import annotations

from collections.abc import Callable

import click

from grader.i18n import pick
from grader.practice.answers import LETTERS
from grader.practice.bank import PosedQuestion
from grader.practice.texts import text


def echo_wrapped(text: str) -> None:
    """``click.echo``, wrapped at the terminal's width on a terminal (at spaces, and between Chinese
    characters by their display width): a long question or explanation never breaks inside a word."""
    import sys

    if not sys.stdout.isatty():
        click.echo(text)
        return
    from rich.console import Console
    from rich.text import Text

    Console(highlight=False, emoji=False).print(Text.from_ansi(text), overflow="fold")


class PlainPrompter:
    """Prints the options with their letters and reads one typed line per answer."""

    def __init__(self, *, read: Callable[[str], str] = input,
                 write: Callable[[str], None] = echo_wrapped, echo_answers: bool = False) -> None:
        self._read = read
        self._echo = echo_answers  # piped input is not echoed; repeat it so a transcript reads well
        self.show = write

    def ask(self, posed: PosedQuestion, lang: str, message: str) -> str | None:
        if posed.kind in ("single-choice", "multiple-choice"):
            for index, option in enumerate(posed.options):
                self.show(f"  {LETTERS[index]}. {pick(option, lang)}")
        try:
            answer = self._read(message + text("prompt_suffix", lang))
        except EOFError:
            return None
        if self._echo:
            self.show(answer)
        return answer


class ArrowKeyPrompter:
    """questionary prompts: arrow keys and space for choices, a line editor for the rest."""

    def __init__(self, *, write: Callable[[str], None] = echo_wrapped) -> None:
        import questionary  # the prompt library loads only when a terminal quiz runs

        self._questionary = questionary
        self.show = write

    def ask(self, posed: PosedQuestion, lang: str, message: str) -> str | None:
        q = self._questionary
        labels = [f"{LETTERS[index]}. {pick(option, lang)}" for index, option in enumerate(posed.options)]
        choices = [q.Choice(title=label, value=LETTERS[index]) for index, label in enumerate(labels)]
        # questionary's own instructions and Ctrl-C message are English: ours are in the quiz's language
        select = {"qmark": ">", "instruction": text("prompt_select", lang)}
        stopped = {"kbi_msg": "\n" + text("prompt_stopped", lang)}
        if posed.kind == "single-choice":
            return q.select(message, choices=choices, **select).ask(**stopped)
        if posed.kind == "multiple-choice":
            picked = q.checkbox(message, choices=choices, qmark=">",
                                instruction=text("prompt_checkbox", lang)).ask(**stopped)
            return None if picked is None else ", ".join(picked)
        if posed.kind == "true-false":
            truth = [q.Choice(title=text("true", lang), value="true"),
                     q.Choice(title=text("false", lang), value="false")]
            return q.select(message, choices=truth, **select).ask(**stopped)
        return q.text(message, qmark=">").ask(**stopped)


def make_prompter(*, plain: bool = False, stderr: bool = False) -> PlainPrompter | ArrowKeyPrompter:
    """The prompter for this terminal: arrow keys where a person answers at one (input and output both
    terminals, unless ``plain``), typed lines otherwise, with piped answers repeated so a transcript reads
    well. With ``stderr`` everything it shows goes there, so stdout holds only a result (``--json``)."""
    import sys

    shown_on = sys.stderr if stderr else sys.stdout
    write = _on_stderr if stderr else echo_wrapped
    if sys.stdin.isatty() and shown_on.isatty() and not plain:
        return ArrowKeyPrompter(write=write)
    return PlainPrompter(read=_read_on_stderr if stderr else input, write=write, echo_answers=not sys.stdin.isatty())


def _on_stderr(line: str) -> None:
    click.echo(line, err=True)


def _read_on_stderr(prompt: str) -> str:
    click.echo(prompt, err=True, nl=False)
    return input()
