"""The ``mha`` command: the root group and the map of verbs.

Each verb lives in its own module under ``grader.verbs`` and is imported only
when it runs, so ``mha check`` does not pay for matplotlib or nbformat.
"""

from __future__ import annotations

import importlib
import importlib.util
import click

from grader import __version__
from grader.errors import MhaError

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
    """A group whose verbs are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in VERBS if _available(name)]

    def invoke(self, ctx: click.Context):
        """The one place where the grader's errors become messages and exit codes."""
        try:
            return super().invoke(ctx)
        except MhaError as error:
            if str(error):
                click.echo(f"mha: {error}", err=True)
            ctx.exit(error.exit_code)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in VERBS or not _available(name):
            return None
        module_name, attribute = VERBS[name].split(":")
        return getattr(importlib.import_module(module_name), attribute)


def _available(name: str) -> bool:
    module_name = VERBS[name].split(":")[0]
    return importlib.util.find_spec(module_name) is not None


@click.group(cls=LazyVerbs, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mha")
def root() -> None:
    """mha-lab: learn and grade multi-head attention in NumPy.

    Students: `mha check` checks the core exercise in exercises/ (`mha check FILE` any exercise).
    Instructors: `mha grade SUBMISSIONS --out DIR` grades a class.
    """


def main(argv: list[str] | None = None) -> None:
    """Run the CLI (click turns usage errors into exit status 2)."""
    root.main(args=argv, prog_name="mha")


if __name__ == "__main__":
    main()
