"""What both warm clients do while a check runs elsewhere: pass Ctrl-C on, and say when the check was lost.

No heavy import: the student's process of a served check imports neither NumPy, click nor rich.
"""

from __future__ import annotations

import signal
import sys


def passing_interrupts(send):
    """Have Ctrl-C here ``send`` the check an interrupt (unless this process was started with Ctrl-C ignored,
    e.g. in the background of a script: it keeps ignoring it, as a cold check would); the handler it replaced."""
    def interrupt(*_):
        try:
            send(b'{"signal": "INT"}')
        except OSError:
            pass

    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    return signal.signal(signal.SIGINT, signal.SIG_IGN if ignored else interrupt)


def lost() -> int:
    """Say the check ended without a status (its process was stopped); the exit status for it."""
    from grader.content.messages import render
    from grader.i18n import resolve_language

    print(f"mha: {render('check_server_lost', {}, resolve_language(None))}", file=sys.stderr)
    return 1
