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
              "from grader.warm.standby import main; main(sys.argv[2], sys.argv[3])")
IN_LINE = 2  # standbys kept: the one advertised and the next, warm, waiting to be (back-to-back checks)
LINE_LOOK = 0.05  # seconds between two looks of a waiting standby at the advert
MARKER_FRESH = 30.0  # seconds: an older start marker is a failed start's (a standby waiting touches its own)


def advert_path(folder, key: str):
    """The address of the standby that takes the next check (``{"pid", "address"}``), written by it alone."""
    return folder / f"check-{key}.address"


def starting_paths(folder, key: str) -> list:
    """One marker per standby started and not yet advertised (warming, or waiting in line)."""
    return list(folder.glob(f"check-{key}.starting-*"))


def spawn(*, key: str, folder, modules: list[str]) -> bool:
    """Start a standby for ``key`` in the background, handing it ``modules`` to import; False if it could not."""
    import secrets

    options: dict = {}
    if hasattr(os, "setsid"):
        options["start_new_session"] = True  # not in the terminal's process group: the student's Ctrl-C is theirs
    else:  # Windows: its own group (Ctrl-C in the console is not its), and no console window of its own
        options["creationflags"] = (getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
                                    | getattr(subprocess, "CREATE_NO_WINDOW", 0))
    marker = folder / f"check-{key}.starting-{secrets.token_hex(4)}"
    try:
        marker.write_text("", encoding="ascii")
        with open(folder / f"check-{key}.log", "ab") as log:
            process = subprocess.Popen([sys.executable, "-c", SPAWN_CODE, json.dumps(sys.path), key, marker.name],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log, cwd=folder,
                                       close_fds=True, **options)
        process.stdin.write(json.dumps(modules).encode())
        process.stdin.close()
    except OSError:
        _remove(marker)
        return False
    process.returncode = 0  # it outlives this process: no ResourceWarning, nobody waits for it
    return True


def main(key: str, marker: str = "") -> None:
    folder = place.private_folder(create=False)
    family = place.relay_family()
    secret = place.authkey(create=False)
    mark = folder / os.path.basename(marker) if folder is not None and marker else None
    try:
        if folder is None or family is None or secret is None or place.server_key() != key:
            print("not started: no private folder, no key, or this interpreter is not the one that asked",
                  file=sys.stderr)
            return
        _standby(folder, key, family, secret, mark)
    finally:
        _remove(mark)


def _standby(folder, key: str, family: str, secret: bytes, mark) -> None:
    from grader.warm.server import OpenedFiles, Snapshot, module_files, warm

    opened = OpenedFiles()
    pause = Yielding(folder, key)
    pause.settle()
    try:
        modules = json.loads(sys.stdin.buffer.read() or b"[]")
    except ValueError:
        modules = []
    modules = modules if isinstance(modules, list) else []
    warm(modules, between=pause)
    pause(now=True)
    portable = _portable_server()
    listener = None
    try:
        snapshot = Snapshot.of(opened.stop() | module_files())
        listener = _listener(folder, key, family, secret)
        if listener is None or not _advertised(folder, key, listener.address, mark):
            return
        _remove(mark)
        stale = snapshot.changed()  # changed while it waited in line: it would refuse the check it is sent
        if stale:
            print(f"stale: {stale}", file=sys.stderr, flush=True)
            return
        print(f"pid {os.getpid()} listening on {listener.address}: {len(snapshot.files)} files watched",
              file=sys.stderr, flush=True)
        _serve_one(listener, key=key, snapshot=snapshot, folder=folder, modules=modules)
    finally:
        if listener is not None:
            _withdrawn(folder, key, listener.address)
            listener.close()
        portable.stop()


class Yielding:
    """A standby warming gives way to a check another standby is running (``busy_path`` markers): on a laptop's
    few cores, warming the next would slow the check a student waits for. Looked at every few imports."""

    EVERY = 0.02  # seconds of warming between two looks
    SETTLE = 0.5  # seconds a standby waits before it warms: the check after a check often comes at once
    LONGEST = 120.0  # seconds a standby gives way in all (a check that long is a hang's; the line must go on)

    def __init__(self, folder, key: str):
        import time

        self.folder, self.key, self.clock = folder, key, time.monotonic
        self.looked, self.waited = self.clock(), 0.0

    def __call__(self, *, now: bool = False) -> None:
        import time

        if not now and self.clock() - self.looked < self.EVERY:
            return
        while self.waited < self.LONGEST and any(fresh(path, self.LONGEST) for path in busy_paths(self.folder,
                                                                                               self.key)):
            time.sleep(LINE_LOOK)
            self.waited += LINE_LOOK
        self.looked = self.clock()

    def settle(self) -> None:
        """Before warming: a moment for a check that comes right after the last, then give way to it."""
        import time

        time.sleep(self.SETTLE)
        self(now=True)


def busy_paths(folder, key: str) -> list:
    """One marker per check a standby of ``key`` is running."""
    return list(folder.glob(f"check-{key}.busy-*"))


def _portable_server():
    """The portable worker of the next check, started now (its NumPy imported while nobody waits)."""
    from grader.sandbox.client import Limits
    from grader.sandbox.portable import PortableServer
    from grader.sandbox.servers import STUDENT_PACKAGES, keep_portable, layers_left_out, linux_missing

    server = PortableServer.start(packages=STUDENT_PACKAGES, spares=1, without=layers_left_out(),
                                  limits=asdict(Limits()), reason=linux_missing() or "asked for")
    # one check, one worker: none is made ahead for a next one (it would import NumPy while the check runs)
    server.spares = 0
    keep_portable(server)
    return server


def _remove(path) -> None:
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


def _listener(folder, key: str, family: str, secret: bytes):
    """A listener of this standby's own (a named pipe, or a Unix socket in ``folder``: only this user may
    connect), known to clients once advertised; None when none can be made."""
    import secrets
    from multiprocessing.connection import Listener

    address = place.relay_address(folder, f"{key}-{secrets.token_hex(4)}", family)
    if address is None:
        return None
    old_mask = os.umask(0o177)
    try:
        return Listening(Listener(address, family, authkey=secret), address)
    except OSError:
        return None
    finally:
        os.umask(old_mask)


class Listening:
    """A ``multiprocessing.connection.Listener`` and the address clients give to reach it."""

    def __init__(self, listener, address: str):
        self.listener, self.address = listener, address

    def accept(self):
        return self.listener.accept()

    def close(self) -> None:
        self.listener.close()

    @property
    def closed(self) -> bool:
        return getattr(self.listener, "_listener", None) is None


def _advertised(folder, key: str, address: str, mark) -> bool:
    """Wait in line until this standby's address is the advert (the one before it took a check, or ended);
    False when none came in the idle time. Its start marker ``mark`` is kept fresh meanwhile."""
    import time

    path = advert_path(folder, key)
    mine = json.dumps({"pid": os.getpid(), "address": address})
    deadline = time.monotonic() + place.idle_seconds()
    touched = time.monotonic()
    while time.monotonic() < deadline:
        if mark is not None and time.monotonic() - touched > MARKER_FRESH / 3:
            touched = time.monotonic()
            try:
                os.utime(mark)
            except OSError:
                pass
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if _dead_advert(path):
                _remove(path)
                continue
            time.sleep(LINE_LOOK)
            continue
        except OSError:
            return False
        with os.fdopen(descriptor, "w", encoding="utf-8") as written:
            written.write(mine)
        return True
    return False


def _dead_advert(path) -> bool:
    """Whether the advert names a standby that no longer runs (it was ended without withdrawing it)."""
    import psutil

    try:
        advert = json.loads(path.read_text(encoding="utf-8"))
        return not psutil.pid_exists(int(advert["pid"]))
    except FileNotFoundError:
        return False
    except (OSError, ValueError, KeyError, TypeError):
        return True  # half written by a standby ended meanwhile, or not one


def _withdrawn(folder, key: str, address: str) -> None:
    """Take this standby's advert down (not another's)."""
    path = advert_path(folder, key)
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("address") == address:
            os.unlink(path)
    except (OSError, ValueError, AttributeError):
        pass


def _serve_one(listener, *, key: str, snapshot, folder, modules: list[str]) -> None:
    """Wait (at most the idle time) for a check from this user; refuse it if stale, else run it."""
    accepted: queue.Queue = queue.Queue()

    def accept() -> None:
        while True:
            try:
                connection = listener.accept()
            except Exception:  # noqa: BLE001 - a failed handshake (not this user's key), or the listener closed
                if listener.closed:
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
        return
    _withdrawn(folder, key, listener.address)  # the next in line takes the next check
    listener.close()
    with connection:
        request = _request(connection, key)
        stale = snapshot.changed()
        if request is None or stale:
            _send(connection, {"refused": stale or "a request this server does not take"})
            if stale:
                print(f"stale: {stale}", file=sys.stderr, flush=True)
            return
        print(f"check {os.getpid()}: {' '.join(map(str, request['argv']))[:200]}", file=sys.stderr, flush=True)
        busy = folder / f"check-{key}.busy-{os.getpid()}"
        try:
            busy.write_text("", encoding="ascii")
        except OSError:
            busy = None
        try:
            _send(connection, {"started": os.getpid()})
            code = run_relayed(connection, request)
            _send(connection, {"exit": code})
        finally:
            _remove(busy)
    if in_line(folder, key) < IN_LINE:  # the one made in this one's place, once its check is done
        spawn(key=key, folder=folder, modules=modules)


def in_line(folder, key: str) -> int:
    """How many standbys of ``key`` wait for a check: the one advertised, and those warming or waiting."""
    return advert_path(folder, key).exists() + sum(fresh(marker) for marker in starting_paths(folder, key))


def fresh(marker, within: float = MARKER_FRESH) -> bool:
    """Whether a marker was made (or touched) in the last ``within`` seconds: a live standby's (one waiting in
    line touches its own now and then)."""
    import time

    try:
        return time.time() - os.stat(marker).st_mtime < within
    except OSError:
        return False


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
    """The client's Ctrl-C, or its going away, as the check's own Ctrl-C: SIGINT to its main thread where
    threads can be signalled (it wakes a wait there, as in a cold check); else (Windows) KeyboardInterrupt
    raised there, and the workers ended, so that a wait for a hung call ends now and it is raised at once."""
    import _thread
    import signal

    def interrupt() -> None:
        if hasattr(signal, "pthread_kill"):
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            return
        _thread.interrupt_main()
        import psutil

        for worker in psutil.Process().children(recursive=True):  # this standby ends after the check
            try:
                worker.kill()
            except psutil.Error:
                pass

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
            interrupt()
        if not data:
            return
