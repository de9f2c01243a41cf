"""The student's side of a relayed warm check (Windows, macOS): send it to the user's standby, print its output.

``served(argv)`` connects to this interpreter's standby (``standby.py``) with
``multiprocessing.connection`` (the user's key proves both ends; on a Unix
socket the standby's user is asked too), sends the command line, folder,
environment and what its streams are (encoding, terminal or not), writes the
bytes the check writes to this process's stdout and stderr as they come, and
returns the exit status; Ctrl-C here is sent there. Anything short of a
standby that accepts the check gives None before anything is written, and the
caller checks cold. It imports neither NumPy, click nor rich.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from grader.warm import place

START_TIMEOUT = 10.0  # seconds for the standby to check its files and say it started
STARTING_WAIT = 5.0  # seconds to wait for a standby that is still warming (started by the previous check)
POLL = 0.25  # seconds between looks for the check's output (where a pipe's wait is not interrupted)


def served(argv: list[str]) -> int | None:
    folder = place.private_folder(create=False)
    family = place.relay_family()
    secret = place.authkey(create=False) if folder is not None else None
    if folder is None or family is None or secret is None:
        return None
    key = place.server_key()
    connection = _connected(family, secret, folder, key)
    if connection is None:
        return None
    try:
        connection.send_bytes(json.dumps(_request(argv, key)).encode("utf-8", "surrogateescape"))
        first = _control(connection.recv_bytes()) if connection.poll(START_TIMEOUT) else None
    except (OSError, EOFError, ValueError):
        first = None
    if not isinstance(first, dict) or not isinstance(first.get("started"), int):
        connection.close()  # refused: stale, or not a request it takes
        return None
    return _followed(connection)


def _connected(family: str, secret: bytes, folder, key: str):
    """A connection to the standby advertised, waiting a little for one still warming or taking over; None:
    none. An advert whose standby no longer listens is taken down (the next in line puts up its own)."""
    from multiprocessing.connection import AuthenticationError, Client

    from grader.warm.standby import advert_path, fresh, starting_paths

    path = advert_path(folder, key)
    deadline = time.monotonic() + STARTING_WAIT
    while True:
        try:
            advert = path.read_text(encoding="utf-8")
            address = json.loads(advert)["address"]
        except (OSError, ValueError, KeyError, TypeError):
            advert = address = None
        if isinstance(address, str):
            try:
                connection = Client(address, family, authkey=secret)
            except (OSError, EOFError, AuthenticationError):
                _taken_down(path, advert)
            else:
                if family == "AF_UNIX" and not _standby_is_ours(connection):
                    connection.close()
                    return None
                return connection
        if time.monotonic() > deadline or not any(fresh(marker) for marker in starting_paths(folder, key)):
            return None
        time.sleep(0.05)


def _taken_down(path, advert: str) -> None:
    """Remove the advert ``advert`` of a standby that does not answer (unless another replaced it)."""
    try:
        if path.read_text(encoding="utf-8") == advert:
            os.unlink(path)
    except OSError:
        pass


def _standby_is_ours(connection) -> bool:
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=os.dup(connection.fileno())) as peer:
            return place.peer_uid(peer) == place.user_id()
    except (OSError, ValueError):
        return False


def _request(argv: list[str], key: str) -> dict:
    """What the standby needs to run the check as this process would: its words, folder, environment, and its
    streams' encodings and terminals (the width of the terminal as COLUMNS, the standby has none)."""
    terminals = [_isatty(stream) for stream in (sys.stdin, sys.stdout, sys.stderr)]
    environment = dict(os.environ)
    if (terminals[1] or terminals[2]) and "COLUMNS" not in environment:
        try:
            size = os.get_terminal_size(1 if terminals[1] else 2)
            environment.update(COLUMNS=str(size.columns), LINES=str(size.lines))
        except OSError:
            pass
    return {"key": key, "argv": argv, "argv0": sys.argv[0], "cwd": os.getcwd(), "environment": environment,
            "terminals": terminals, "encodings": [getattr(sys.stdout, "encoding", None) or "utf-8",
                                                  getattr(sys.stderr, "encoding", None) or "utf-8"],
            "legacy_windows": _legacy_windows(terminals[1])}


def _isatty(stream) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (OSError, ValueError):
        return False


def _legacy_windows(terminal: bool) -> bool | None:
    """On a Windows console, whether it lacks escape sequences (rich draws it the old way then): the
    standby has no console to ask."""
    if os.name != "nt" or not terminal:
        return None
    try:
        from rich._windows import get_windows_console_features

        return not get_windows_console_features().vt
    except Exception:  # noqa: BLE001 - an older rich: the standby decides as rich does
        return None


def _followed(connection) -> int:
    """Print the check's output as it comes; its exit status. Ctrl-C here interrupts the check there."""
    from grader.warm.following import passing_interrupts
    from grader.warm.standby import CONTROL, ERR, OUT

    previous = passing_interrupts(connection.send_bytes)
    outputs = {OUT: sys.stdout, ERR: sys.stderr}
    try:
        while True:
            try:
                if not connection.poll(POLL):
                    continue
                message = connection.recv_bytes()
            except InterruptedError:
                continue
            except (OSError, EOFError):
                return _lost()
            tag, data = message[:1], message[1:]
            if tag in outputs:
                stream = outputs[tag]
                stream.flush()
                stream.buffer.write(data)
                stream.buffer.flush()
            elif tag == CONTROL:
                control = _control(message)
                if isinstance(control, dict) and isinstance(control.get("exit"), int):
                    return control["exit"]
    finally:
        signal.signal(signal.SIGINT, previous)
        connection.close()


def _control(message: bytes):
    try:
        return json.loads(message)
    except ValueError:
        return None


def _lost() -> int:
    from grader.warm.following import lost

    return lost()


def start(argv: list[str], modules: list[str]) -> None:
    """After a cold check, start this interpreter's line of standbys (unless one is on its way)."""
    from grader.warm.standby import IN_LINE, in_line, spawn

    folder = place.private_folder(create=True)
    family = place.relay_family()
    if folder is None or family is None or place.authkey(create=True) is None:
        return
    key = place.server_key()
    if place.relay_address(folder, key, family) is None:
        return
    for _ in range(IN_LINE - in_line(folder, key)):
        spawn(key=key, folder=folder, modules=modules)
