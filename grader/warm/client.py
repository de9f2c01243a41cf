"""The student's side of a warm check: send the check to the user's warm server, or say it must run cold.

``served(argv)`` connects to the server of this interpreter (``place``),
makes sure it runs as this user, and hands it the command line, the folder,
the environment, the umask and the terminal's three descriptors; the check then
runs in the server's fork, writing straight to this terminal (the spinner,
colours and width are the terminal's own). This process only waits for the
exit status, and passes on Ctrl-C. Anything short of a server that accepts
the check (none running, a stale one, another user's, a refusal) gives None,
before anything is written, and the caller checks the cold way and then
``start_server``. It imports neither NumPy, click nor rich.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

from grader.warm import place
from grader.warm.following import lost as _lost
from grader.warm.following import passing_interrupts

REPLY_LIMIT = 1 << 16
CONNECT_TIMEOUT = 1.0
START_TIMEOUT = 10.0  # seconds for the server to check its files and fork: past them, the check runs cold
# the verbs a warm server runs; `--unlock` asks questions first (a prompt of its own); a portable worker asked
# for where the Linux sandbox runs is the cold path's (the relayed server keeps one only where it is the sandbox)
SERVED_VERBS = ("check",)
SPAWN_CODE = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
              "from grader.warm.server import main; main(sys.argv[2])")


def eligible(argv: list[str]) -> bool:
    """Whether ``mha ARGV`` is a check a warm server may run for this process."""
    if not argv or argv[0] not in SERVED_VERBS or "--unlock" in argv:
        return False
    words = list(zip(argv, argv[1:]))
    if ("--isolation", "portable") in words or "--isolation=portable" in argv:
        return False
    if os.environ.get("MHA_ISOLATION", "").strip().lower() == "portable":
        return False
    flags = sys.flags
    if flags.isolated or flags.no_site or flags.ignore_environment or flags.optimize:
        return False
    return place.enabled() and all(_open(descriptor) for descriptor in (0, 1, 2))


def served(argv: list[str]) -> int | None:
    """The exit status of ``mha ARGV`` run by the warm server; None when it did not take the check."""
    if not eligible(argv):
        return None
    if place.server_kind() == place.RELAY:
        from grader.warm.relay import served as relayed

        try:
            return relayed(argv)
        except Exception:  # noqa: BLE001 - nothing was written yet: the check runs cold and says what it says
            return None
    folder = place.private_folder(create=False)
    path = place.socket_path(folder, place.server_key()) if folder is not None else None
    if path is None:
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.settimeout(CONNECT_TIMEOUT)
        connection.connect(os.fspath(path))
        if place.peer_uid(connection) != os.getuid():
            connection.close()
            return None
        request = {"key": path.stem.removeprefix("check-"), "argv": argv, "argv0": sys.argv[0],
                   "cwd": os.getcwd(), "environment": dict(os.environ), "umask": _umask()}
        socket.send_fds(connection, [json.dumps(request).encode("utf-8", "surrogateescape")], [0, 1, 2])
        connection.settimeout(START_TIMEOUT)
        first = _message(connection)
    except (OSError, ValueError):
        connection.close()
        return None
    if not isinstance(first, dict) or not isinstance(first.get("started"), int):
        connection.close()  # refused: stale, or the fork server is gone
        return None
    return _followed(connection)


def _followed(connection: socket.socket) -> int:
    """Wait for the check's exit status; Ctrl-C here interrupts the check there, as in a cold check."""
    previous = passing_interrupts(connection.send)
    connection.settimeout(None)
    try:
        while True:
            try:
                message = _message(connection)
            except InterruptedError:
                continue
            except (OSError, ValueError):
                message = None
            if isinstance(message, dict) and isinstance(message.get("exit"), int):
                return message["exit"]
            if message is None:  # the check's process ended without a status: killed
                return _lost()
    finally:
        signal.signal(signal.SIGINT, previous)
        connection.close()


def _message(connection: socket.socket):
    data = connection.recv(REPLY_LIMIT)
    return json.loads(data) if data else None


def _open(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
    except OSError:
        return False
    return True


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def start_server(argv: list[str], modules: list[str]) -> None:
    """After a cold check, start this interpreter's warm server in the background (unless one runs or is
    starting), handing it ``modules``: what the check imported, which the server imports before it listens."""
    if not eligible(argv):
        return
    if place.server_kind() == place.RELAY:
        from grader.warm.relay import start

        return start(argv, modules)
    folder = place.private_folder(create=True)
    if folder is None:
        return
    key = place.server_key()
    if place.socket_path(folder, key) is None or _locked(place.lock_path(folder, key)):
        return
    import subprocess

    try:
        with open(folder / f"check-{key}.log", "ab") as log:
            process = subprocess.Popen([sys.executable, "-c", SPAWN_CODE, json.dumps(sys.path), key],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log, cwd=folder,
                                       start_new_session=True, close_fds=True)
        process.stdin.write(json.dumps(modules).encode())
        process.stdin.close()
    except OSError:
        return
    process.returncode = 0  # it outlives this process: no ResourceWarning, nobody waits for it


def _locked(path) -> bool:
    """Whether a server holds (or is starting under) the lock at ``path``."""
    import fcntl

    try:
        with open(path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True  # no lock to be had: start nothing
    return False
