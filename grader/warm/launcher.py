"""The ``mha`` command's first steps: a check the user's warm server can run goes there, all else to the CLI.

A check answered by the warm check server (``grader.warm``) costs this process
an interpreter's start and a socket, no NumPy. Otherwise the command runs as
it always has (``grader.cli.main``), and after a check that a warm server could
have run, one is started in the background for the next.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    from grader.warm.client import served

    status = served(argv)
    if status is not None:
        sys.exit(status)
    from grader.cli import main as cli_main

    try:
        cli_main(argv)
    except SystemExit as ended:
        if ended.code in (None, 0, 1):  # a check ran (1: one of them failed), not a usage error
            from grader.warm.client import start_server

            start_server(argv, sorted(sys.modules))
        raise
