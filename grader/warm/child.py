"""One warm check: the server's fork becomes the student's ``mha check`` process and runs the command as is.

It takes on what the client's process had: the terminal (its three
descriptors, as standard streams built as the interpreter builds them), the
folder, the umask, the environment and the command line; it gets a fresh
random state; and it is handed the server's fork server (``servers.keep_server``)
in place of starting one, so its student's code runs in a fresh sandboxed
worker as in a cold check. It tells the client it started, passes on the
client's Ctrl-C (or its going away) as an interrupt, runs ``grader.cli.main``,
runs the exit handlers (those of the modules imported, as in a cold process:
the server registers none of its own) and sends the exit status.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import signal
import socket
import sys
import threading


def run(connection: socket.socket, descriptors: list[int], request: dict, *, fork_server, closing) -> None:
    code = 1
    try:
        for thing in closing:
            thing.close()
        _restore_signals()
        try:
            os.chdir(request["cwd"])  # before the terminal is taken: a folder gone since is the cold check's to say
        except (OSError, KeyError, TypeError):
            connection.send(b'{"refused": "the folder of the check cannot be entered"}')
            os._exit(0)
        _take_over(descriptors, request)
        from grader.sandbox.servers import keep_server

        keep_server(fork_server)
        connection.settimeout(None)
        connection.send(json.dumps({"started": os.getpid()}).encode())
        threading.Thread(target=_interrupts, args=(connection,), name="mha-warm-interrupts", daemon=True).start()
        code = _checked(request["argv"])
        _finish()
    except BaseException:  # noqa: BLE001: a fork never returns into the server's loop
        try:
            import traceback

            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # the status is sent whatever comes now
        _FINISHED.set()
        try:
            connection.send(json.dumps({"exit": code}).encode())
        except OSError:
            pass
        os._exit(0)


_FINISHED = threading.Event()  # the status is on its way: the client's end is no interrupt then


def _restore_signals() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)


def _take_over(descriptors: list[int], request: dict) -> None:
    """Become the client's process: its streams, folder, umask, environment and command line."""
    for target, descriptor in enumerate(descriptors):
        os.dup2(descriptor, target)
        os.close(descriptor)
    os.umask(int(request.get("umask", 0o022)))
    os.environ.clear()
    os.environ.update({str(name): str(value) for name, value in request["environment"].items()})
    sys.argv = [str(request.get("argv0") or "mha"), *map(str, request["argv"])]
    sys.stdin = sys.__stdin__ = _stream(0, "r")
    sys.stdout = sys.__stdout__ = _stream(1, "w")
    sys.stderr = sys.__stderr__ = _stream(2, "w")
    if "numpy" in sys.modules:  # a fresh process's global random state, as a cold check has
        sys.modules["numpy"].random.seed()


def _stream(descriptor: int, mode: str) -> io.TextIOWrapper:
    """A standard stream on ``descriptor`` as the interpreter makes one at start: its encoding from the locale
    (or PYTHONIOENCODING), line-buffered on a terminal, stderr always, stderr escaping what it cannot encode."""
    import locale

    chosen = os.environ.get("PYTHONIOENCODING", "")
    encoding, _, errors = chosen.partition(":")
    encoding = encoding or ("utf-8" if sys.flags.utf8_mode else locale.getencoding())
    errors = errors or ("backslashreplace" if descriptor == 2 else "surrogateescape" if _c_locale() else "strict")
    raw = io.FileIO(descriptor, mode, closefd=False)
    interactive = raw.isatty()
    if mode == "r":
        buffered = io.BufferedReader(raw)
    else:
        buffered = io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors,
                            line_buffering=interactive or descriptor == 2, write_through=descriptor == 2)


def _c_locale() -> bool:
    import locale

    return locale.setlocale(locale.LC_CTYPE) in ("C", "POSIX")


def _interrupts(connection: socket.socket) -> None:
    """The client's Ctrl-C, or its end, as SIGINT here (the check stops as a cold one does on Ctrl-C)."""
    while True:
        try:
            data = connection.recv(1024)
        except OSError:
            data = b""
        if _FINISHED.is_set():
            return
        if not data or b"INT" in data:
            os.kill(os.getpid(), signal.SIGINT)
        if not data:
            return


def _checked(argv: list[str]) -> int:
    """``mha ARGV`` as the cold process runs it; its exit status."""
    from grader.cli import main

    try:
        main([str(word) for word in argv])
    except SystemExit as ended:
        if ended.code is None:
            return 0
        if isinstance(ended.code, int):
            return ended.code
        print(ended.code, file=sys.stderr)
        return 1
    return 0


def _finish() -> None:
    """What the interpreter does at exit: wait for the check's own threads, run its exit handlers, flush."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
