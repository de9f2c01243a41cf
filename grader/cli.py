"""The ``mha`` command: the root group and the map of verbs.

Each verb lives in its own module under ``grader.verbs`` and is imported only
when it runs, so ``mha check`` does not pay for matplotlib or nbformat.
"""

from __future__ import annotations

import importlib
import importlib.util

import click

from grader import __version__
from grader.content.help import LocalizedContext
from grader.errors import MhaError

# Modules of the optional `notebook` extra (pyproject.toml): a verb that needs one where it is not
# installed ends in a message saying what to install, never a traceback.
NOTEBOOK_EXTRA_MODULES = frozenset({"nbformat", "nbclient", "nbconvert", "nbgrader", "jupyterlab", "jupyter_client",
                                    "jupyter_core", "ipykernel", "IPython"})

# verb name -> "module:attribute" of its click command, in the order of --help.
VERBS: dict[str, str] = {
    "check": "grader.verbs.check:command",
    "grade": "grader.verbs.grade:command",
    "merge": "grader.verbs.merge:command",
    "similarity": "grader.verbs.similarity:command",
    "audit": "grader.verbs.audit:command",
    "release": "grader.verbs.release:command",
    "quiz": "grader.verbs.quiz:command",
    "drill": "grader.verbs.drill:command",
    "viz": "grader.verbs.viz:command",
    "demo": "grader.verbs.demo:command",
}


class LazyVerbs(click.Group):
    """A group whose verbs are imported on first use, each with its help page in the reader's language."""

    context_class = LocalizedContext  # the root's own page (mha --help) too

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in VERBS if _available(name)]

    def invoke(self, ctx: click.Context):
        """The one place where the grader's errors become messages and exit codes."""
        from grader.content.help import LANG_KEY

        words = [*getattr(ctx, "_protected_args", ()), *ctx.args]  # the verb's words (click clears them)
        ctx.meta[LANG_KEY] = _language(words)  # before the verb's own parse, where --help shows its page
        try:
            return super().invoke(ctx)
        except click.ClickException as error:  # click's usage errors, in the reader's language
            from grader.content.usage import localized

            raise localized(error, _language(words)) from None
        except MhaError as error:
            message = error.in_language(_language(words))
            if message:
                click.echo(f"mha: {message}", err=True)
            ctx.exit(error.exit_code)
        except ModuleNotFoundError as error:
            if (error.name or "").split(".")[0] not in NOTEBOOK_EXTRA_MODULES:
                raise
            click.echo(f"mha: {_missing_extra(words, error.name.split('.')[0])}", err=True)
            ctx.exit(2)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in VERBS or not _available(name):
            return None
        from grader.content.help import help_language, localized_command

        module_name, attribute = VERBS[name].split(":")
        return localized_command(getattr(importlib.import_module(module_name), attribute), name, help_language(ctx))

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from grader.content.help import ROOT, help_language, help_text

        about = help_text(f"verb.{ROOT}.about", help_language(ctx))
        if about:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(about)


def _language(words: list[str]) -> str:
    """The language a command line asks for (``--lang zh``, ``--lang=zh``), else the locale's: the one its
    errors are told in, even when the parse that would have read --lang failed."""
    from grader.i18n import LANGUAGES, resolve_language

    lang = next((value for flag, value in zip(words, words[1:]) if flag == "--lang"),
                next((word.split("=", 1)[1] for word in words if word.startswith("--lang=")), None))
    return resolve_language(lang if lang in LANGUAGES else None)


def _missing_extra(words: list[str], module: str) -> str:
    from grader.content.messages import render
    from grader.paths import PROJECT_DIR

    verb = next((word for word in words if word in VERBS), "this command")
    # an editable install or a checkout names its folder; an installed release, its own folder's "."
    where = str(PROJECT_DIR) if (PROJECT_DIR / "pyproject.toml").is_file() else "."
    return render("missing_extra", {"command": f"mha {verb}", "module": module, "where": where},
                  _language(words))


def _available(name: str) -> bool:
    module_name = VERBS[name].split(":")[0]
    return importlib.util.find_spec(module_name) is not None


@click.group(cls=LazyVerbs, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mha")
def root() -> None:
    """mha-lab: learn and grade multi-head attention in NumPy (the help pages: grader/content/help.toml)."""


def main(argv: list[str] | None = None) -> None:
    """Run the CLI (click turns usage errors into exit status 2)."""
    _printable_streams()
    root.main(args=argv, prog_name="mha")


def _printable_streams() -> None:
    """Text this stream's encoding cannot hold is written anyway: UTF-8 into pipes and files (Windows gives
    them its ANSI code page, which has no ✓ and no Chinese); on a terminal that is not UTF-8, and in an
    encoding asked for with PYTHONIOENCODING (e.g. gbk, a Chinese console's), the marks it lacks as the
    nearest ones it has (``grader.render.stand_ins``). An error handler asked for there is kept."""
    import os
    import sys

    asked = os.environ.get("PYTHONIOENCODING", "")
    if ":" in asked:
        return
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding == "utf8" or not hasattr(stream, "reconfigure"):
            continue
        try:
            if asked or stream.isatty():
                from grader.render.stand_ins import register

                stream.reconfigure(errors=register())
            else:
                stream.reconfigure(encoding="utf-8", errors="backslashreplace")
        except (OSError, ValueError):  # a stream that cannot change now keeps what it has
            continue


if __name__ == "__main__":
    main()
