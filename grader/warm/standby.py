"""The relayed warm check server (Windows, macOS): a process started ahead that answers one check, then ends.

Where the portable worker is the sandbox there is neither a fork server to keep
nor (on Windows) a fork to make a fresh check process from the warm one. So
the warm state is made ahead instead: a standby is an interpreter that has
imported what a cold check imported (recording the files it read, as
``server.py`` does) and has its portable worker started (``PortableServer``
with one spare: NumPy imported in it). It listens on the user's named pipe (or
Unix socket: ``place.relay_address``) with ``multiprocessing.connection``
(authenticated by the user's key: ``place.authkey``; on a Unix socket the
peer's user is asked too) and, for the first check sent to it:

1. refuses it and ends when a file it was built from changed (the client checks cold, which starts a fresh one);
2. otherwise stops listening, starts the next standby (which warms while this check runs) and runs the check
   as a cold process would, in the client's folder, environment and command line, its output relayed to the
   client as it is written (``relay.py`` prints it), the client's Ctrl-C raised here as KeyboardInterrupt;
3. sends the exit status and ends, with its worker: every check has a fresh process and a fresh worker.

A standby nobody asks ends after ``place.idle_seconds()``.
"""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import asdict

from grader.warm import place

REQUEST_LIMIT = 1 << 20
OUT, ERR, CONTROL = b"1", b"2", b"{"  # what a message from a standby holds, by its first byte
SPAWN_CODE = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
              "from grader.warm.standby import main; main(sys.argv[2])")


def starting_path(folder, key: str):
    """A standby being started (its pid): another is not started meanwhile, and a client may wait for it."""
    return folder / f"check-{key}.starting"


def spawn(*, key: str, folder, modules: list[str], environment: dict | None = None) -> bool:
    """Start a standby for ``key`` in the background, handing it ``modules`` to import; False if it could not."""
    options: dict = {}
    if hasattr(os, "setsid"):
        options["start_new_session"] = True  # not in the terminal's process group: the student's Ctrl-C is theirs
    else:  # Windows: its own group (Ctrl-C in the console is not its), and no console window of its own
        options["creationflags"] = (getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
                                    | getattr(subprocess, "CREATE_NO_WINDOW", 0))
    try:
        with open(folder / f"check-{key}.log", "ab") as log:
            process = subprocess.Popen([sys.executable, "-c", SPAWN_CODE, json.dumps(sys.path), key],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log, cwd=folder,
                                       env=environment, close_fds=True, **options)
        starting_path(folder, key).write_text(str(process.pid), encoding="ascii")
        process.stdin.write(json.dumps(modules).encode())
        process.stdin.close()
    except OSError:
        return False
    process.returncode = 0  # it outlives this process: no ResourceWarning, nobody waits for it
    return True


def main(key: str) -> None:
    folder = place.private_folder(create=False)
    family = place.relay_family()
    secret = place.authkey(create=False)
    if folder is None or family is None or secret is None or place.server_key() != key:
        _ended_starting(folder, key)
        print("not started: no private folder, no key, or this interpreter is not the one that asked",
              file=sys.stderr)
        return
    from grader.warm.server import OpenedFiles, Snapshot, module_files, warm

    opened = OpenedFiles()
    try:
        modules = json.loads(sys.stdin.buffer.read() or b"[]")
    except ValueError:
        modules = []
    modules = modules if isinstance(modules, list) else []
    warm(modules)
    portable = _portable_server()
    try:
        snapshot = Snapshot.of(opened.stop() | module_files())
        listener = _listener(place.relay_address(folder, key, family), family, secret)
        _ended_starting(folder, key)
        if listener is None:
            print("not started: another standby listens", file=sys.stderr)
            return
        print(f"pid {os.getpid()} listening on {listener.address}: {len(snapshot.files)} files watched",
              file=sys.stderr, flush=True)
        _serve_one(listener, key=key, snapshot=snapshot, portable=portable, folder=folder, modules=modules)
    finally:
        portable.stop()


def _portable_server():
    """The portable worker of the next check, started now (its NumPy imported while nobody waits)."""
    from grader.sandbox.client import Limits
    from grader.sandbox.servers import STUDENT_PACKAGES, keep_portable, layers_left_out, linux_missing
    from grader.sandbox.portable import PortableServer

    server = PortableServer.start(packages=STUDENT_PACKAGES, spares=1, without=layers_left_out(),
                                  limits=asdict(Limits()), reason=linux_missing() or "asked for")
    keep_portable(server)
    return server


def _ended_starting(folder, key: str) -> None:
    if folder is not None:
        try:
            os.unlink(starting_path(folder, key))
        except OSError:
            pass


def _listener(address: str | None, family: str, secret: bytes):
    """A listener on ``address``, or None when a live standby has it (a Unix socket left by a dead one is
    taken over; a named pipe goes with its process)."""
    from multiprocessing.connection import Client, Listener

    if address is None:
        return None
    if family == "AF_UNIX" and os.path.exists(address):
        try:
            Client(address, family, authkey=secret).close()
            return None
        except (OSError, EOFError, ValueError):
            os.unlink(address)
        except Exception:  # noqa: BLE001 - AuthenticationError: someone's, not ours; leave it be
            return None
    old_mask = os.umask(0o177)  # a Unix socket only this user may connect to
    try:
        return Listener(address, family, authkey=secret)
    except OSError:  # the pipe exists: another standby has it
        return None
    finally:
        os.umask(old_mask)


def _serve_one(listener, *, key: str, snapshot, portable, folder, modules: list[str]) -> None:
    """Wait (at most the idle time) for a check from this user; refuse it if stale, else run it."""
    accepted: queue.Queue = queue.Queue()

    def accept() -> None:
        while True:
            try:
                connection = listener.accept()
            except Exception:  # noqa: BLE001 - a failed handshake (not this user's key), or the listener closed
                if getattr(listener, "_listener", None) is None:
                    return
                continue
            if _same_user(connection):
                accepted.put(connection)
                return
            connection.close()

    threading.Thread(target=accept, name="mha-standby-accept", daemon=True).start()
    try:
        connection = accepted.get(timeout=place.idle_seconds())
    except queue.Empty:
        listener.close()
        return
    with connection:
        request = _request(connection, key)
        stale = snapshot.changed()
        if request is None or stale:
            listener.close()
            _send(connection, {"refused": stale or "a request this server does not take"})
            if stale:
                print(f"stale: {stale}", file=sys.stderr, flush=True)
            return
        listener.close()  # the next standby listens in its place
        spawn(key=key, folder=folder, modules=modules)
        print(f"check {os.getpid()}: {' '.join(map(str, request['argv']))[:200]}", file=sys.stderr, flush=True)
        _send(connection, {"started": os.getpid()})
        code = run_relayed(connection, request)
        _send(connection, {"exit": code})


def _same_user(connection) -> bool:
    """On a Unix socket, whether the peer runs as this user (a named pipe's peer proved it has the key)."""
    import socket

    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return True
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=os.dup(connection.fileno())) as peer:
            return place.peer_uid(peer) == os.getuid()
    except (OSError, ValueError, AttributeError):
        return False


def _request(connection, key: str) -> dict | None:
    """The check asked for, as JSON (never unpickled); None when it is not one this standby takes."""
    try:
        if not connection.poll(5.0):
            return None
        request = json.loads(connection.recv_bytes(REQUEST_LIMIT).decode("utf-8", "surrogateescape"))
    except (OSError, EOFError, ValueError):
        return None
    fine = (isinstance(request, dict) and request.get("key") == key and isinstance(request.get("argv"), list)
            and isinstance(request.get("environment"), dict) and isinstance(request.get("cwd"), str))
    return request if fine else None


def _send(connection, message: dict) -> None:
    try:
        connection.send_bytes(json.dumps(message).encode())
    except (OSError, ValueError):
        pass


class RelayedStream(io.RawIOBase):
    """A standard stream's bytes sent to the client as they are written (``tag``: which of its streams)."""

    def __init__(self, connection, tag: bytes, lock: threading.Lock, *, terminal: bool):
        super().__init__()
        self.connection, self.tag, self.lock, self.terminal = connection, tag, lock, terminal

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.terminal

    def write(self, data) -> int:
        with self.lock:
            try:
                self.connection.send_bytes(self.tag + bytes(data))
            except (OSError, ValueError):
                pass  # the client is gone: its interrupt ends the check
        return len(data)


def run_relayed(connection, request: dict) -> int:
    """Run ``mha ARGV`` for the client as its own process would: its folder, environment, command line, and
    streams like its own (their encodings and whether each is a terminal); the exit status."""
    from grader.warm.child import _checked

    try:
        os.chdir(request["cwd"])
    except OSError:
        pass  # a folder gone since: the check says what it says of a missing file
    os.environ.clear()
    os.environ.update({str(name): str(value) for name, value in request["environment"].items()})
    sys.argv = [str(request.get("argv0") or "mha"), *map(str, request["argv"])]
    terminals = request.get("terminals") if isinstance(request.get("terminals"), list) else [False, False, False]
    encodings = request.get("encodings") if isinstance(request.get("encodings"), list) else ["utf-8", "utf-8"]
    lock = threading.Lock()
    streams = []
    for index, tag in ((1, OUT), (2, ERR)):
        raw = RelayedStream(connection, tag, lock, terminal=bool(terminals[index]))
        stream = io.TextIOWrapper(io.BufferedWriter(raw), encoding=str(encodings[index - 1] or "utf-8"),
                                  errors="backslashreplace" if index == 2 else "strict",
                                  line_buffering=raw.terminal or index == 2, write_through=index == 2)
        streams.append(stream)
    sys.stdin = sys.__stdin__ = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the check reads none
    sys.stdout = sys.__stdout__ = streams[0]
    sys.stderr = sys.__stderr__ = streams[1]
    if "rich.console" in sys.modules and request.get("legacy_windows") is not None:
        # the client's console, not this process's (it has none), says whether it takes escape sequences
        sys.modules["rich.console"].detect_legacy_windows = lambda: bool(request["legacy_windows"])
    if "numpy" in sys.modules:  # a fresh process's global random state, as a cold check has
        sys.modules["numpy"].random.seed()
    finished = threading.Event()
    threading.Thread(target=_interrupts, args=(connection, finished), name="mha-standby-interrupts",
                     daemon=True).start()
    try:
        code = _checked(request["argv"])
    except KeyboardInterrupt:
        code = 130
    finally:
        finished.set()
    for thread in threading.enumerate():  # the check's own threads (e.g. its worker's end), as at exit
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    for stream in streams:
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def _interrupts(connection, finished: threading.Event) -> None:
    """The client's Ctrl-C, or its going away, as KeyboardInterrupt in the check (as a cold check gets it)."""
    import _thread

    while not finished.is_set():
        try:
            if not connection.poll(0.2):
                continue
            data = connection.recv_bytes(1024)
        except (OSError, EOFError):
            data = b""
        if finished.is_set():
            return
        if not data or b"INT" in data:
            _thread.interrupt_main()
        if not data:
            return
