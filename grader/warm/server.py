"""The warm check server: the grader imported once, a fork server kept, one fork per check.

Started by ``client.start_server`` after a cold check (``python -c ... main(key)``
with the client's import path and environment), it:

1. ends at once unless ``key`` is what it computes itself (``place.server_key``) and it can take the key's lock
   (one server per key);
2. imports the modules the cold check imported (their names on its standard input) while recording every file
   it opens (an audit hook), and starts a fork server (``servers.launch_server``, one spare worker);
3. listens on the key's socket, 0600 in the user's private folder, and for each connection from this user
   makes sure that nothing it was built from changed (``Snapshot``: every module's file and every file opened
   while warming, by size, time and inode) and that its fork server lives, then forks ``child.run``;
   otherwise it refuses (the client checks cold) and ends, so the next cold check starts a fresh one;
4. ends after ``place.idle_seconds()`` without a check.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.warm import place

REQUEST_LIMIT = 1 << 20
UNWATCHED = ("/proc/", "/dev/", "/sys/")


@dataclass(frozen=True)
class Snapshot:
    """The files a warm state was built from, as they were: ``changed()`` says whether any is not now."""

    files: tuple[tuple[str, tuple[int, int, int]], ...]

    @classmethod
    def of(cls, paths) -> Snapshot:
        files = []
        for path in sorted(set(paths)):
            seen = _identity(path)
            if seen is not None:
                files.append((path, seen))
        return cls(files=tuple(files))

    def changed(self) -> str | None:
        """The first file that is not as it was (None: all are)."""
        for path, seen in self.files:
            if _identity(path) != seen:
                return path
        return None


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    return (found.st_size, found.st_mtime_ns, found.st_ino)


class OpenedFiles:
    """Every file opened for reading while ``recording`` (an audit hook stays once added: it is made inert)."""

    def __init__(self):
        self.paths: set[str] = set()
        self.recording = True
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args) -> None:
        if not self.recording or event != "open":
            return
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return  # a descriptor
        if mode is not None and any(letter in str(mode) for letter in "wax+"):
            return
        if mode is None and isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR):
            return
        self.paths.add(os.path.abspath(path))

    def stop(self) -> set[str]:
        """The files opened, less the system's and the grader's own caches and settings (each kept under a
        key of what it was computed from, and read afresh by every check)."""
        self.recording = False
        from grader.files import user_cache_dir
        from grader.seeding import course_key_file

        kept = tuple(os.path.join(os.path.abspath(folder), "") for folder in (user_cache_dir(),
                                                                             course_key_file().parent))
        return {path for path in self.paths if not path.startswith(UNWATCHED + kept)}


def module_files() -> set[str]:
    """The source (and compiled) file of every module imported, and the worker's sources: the fork
    server reads those in its own process, which this one's audit hook never sees."""
    from grader.sandbox import worker

    files = {str(path) for path in Path(worker.__file__).parent.glob("*.py")}
    for module in list(sys.modules.values()):
        for name in ("__file__", "__cached__"):
            value = getattr(module, name, None)
            if isinstance(value, str):
                files.add(os.path.abspath(value))
    return files


def warm(modules: list[str], *, between=None) -> None:
    """Import what a cold check imported (a module that no longer imports is left to the check); ``between()``
    is called before each import (a standby pauses there while a check runs)."""
    import importlib

    for name in modules:
        if not isinstance(name, str) or name == "__main__" or name in sys.modules:
            continue
        if between is not None:
            between()
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001: a module of the check's own that is gone is imported (or not) by it
            continue


def main(key: str) -> None:
    folder = place.private_folder(create=False)
    if folder is None or place.server_key() != key:
        print("not started: the folder is not private, or this interpreter is not the one that asked",
              file=sys.stderr)
        return
    path = place.socket_path(folder, key)
    if path is None:
        return
    import fcntl

    lock = open(place.lock_path(folder, key), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("not started: another server has the key", file=sys.stderr)
        return
    opened = OpenedFiles()
    try:
        modules = json.loads(sys.stdin.buffer.read() or b"[]")
    except ValueError:
        modules = []
    warm(modules if isinstance(modules, list) else [])
    from grader.sandbox.link import ForkServerError
    from grader.sandbox.servers import launch_server

    try:
        fork_server = launch_server(spares=1).ready()
    except ForkServerError as failed:
        print(f"no fork server: {failed}", file=sys.stderr)
        return
    try:
        snapshot = Snapshot.of(opened.stop() | module_files())
        _listen(path, key, lock, snapshot, fork_server)
    finally:
        fork_server.stop()


def _listen(path, key: str, lock, snapshot: Snapshot, fork_server) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        os.unlink(path)  # a dead server's socket: the lock says no live one has it
    except FileNotFoundError:
        pass
    old_mask = os.umask(0o177)
    try:
        listener.bind(os.fspath(path))
    finally:
        os.umask(old_mask)
    listener.listen(8)
    bound = os.stat(path).st_ino
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # each check's process is reaped by the kernel
    signal.signal(signal.SIGTERM, _ended)  # asked to end: its socket goes, its fork server ends
    idle = place.idle_seconds()
    print(f"pid {os.getpid()} listening on {path}: {len(snapshot.files)} files watched", file=sys.stderr, flush=True)
    try:
        while select.select([listener], [], [], idle)[0]:
            connection, _ = listener.accept()
            with connection:
                if not _served(connection, key=key, snapshot=snapshot, fork_server=fork_server,
                               closing=(listener, lock)):
                    break
    finally:
        try:
            if os.stat(path).st_ino == bound:
                os.unlink(path)
        except OSError:
            pass
        listener.close()


def _ended(*_) -> None:
    raise SystemExit(0)


def _served(connection: socket.socket, *, key: str, snapshot: Snapshot, fork_server, closing) -> bool:
    """Fork the check ``connection`` asks for; False when this server must end (what it was built from changed)."""
    connection.settimeout(5.0)
    try:
        if place.peer_uid(connection) != os.getuid():
            return True
        data, descriptors, _, _ = socket.recv_fds(connection, REQUEST_LIMIT, 3)
    except OSError:
        return True
    try:
        request = json.loads(data.decode("utf-8", "surrogateescape"))
        fine = (isinstance(request, dict) and request.get("key") == key and len(descriptors) == 3
                and isinstance(request.get("argv"), list) and isinstance(request.get("environment"), dict))
    except ValueError:
        fine = False
    stale = snapshot.changed() or (None if fork_server.process.poll() is None else "the fork server ended")
    if not fine or stale:
        for descriptor in descriptors:
            os.close(descriptor)
        try:
            connection.send(json.dumps({"refused": stale or "a request this server does not take"}).encode())
        except OSError:
            pass
        if stale:
            print(f"stale: {stale}", file=sys.stderr, flush=True)
        return not stale
    pid = os.fork()
    if pid == 0:
        try:
            from grader.warm.child import run

            run(connection, descriptors, request, fork_server=fork_server, closing=closing)
        finally:
            os._exit(1)  # never back into the server's loop (nor its fork server's end), whatever happened
    for descriptor in descriptors:
        os.close(descriptor)
    print(f"check {pid}: {' '.join(map(str, request['argv']))[:200]}", file=sys.stderr, flush=True)
    return True
