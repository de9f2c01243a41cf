"""The other side of the boundary as the trusted side holds it: the fork server, and one live worker.

``ForkServer`` starts (or attaches to) the fork server program
(``grader/sandbox/worker/forkserver.py``) and asks it for workers.
``WorkerLink`` is one worker: asked of a fork server, spoken to under
deadlines, killed. It owns the worker's scratch folder and its two pipes, and
the connection to its keeper (the process that kills it on request and
reports how it ended). Nothing here blocks past a deadline: a worker that
stops reading, stops writing or writes too much ends as ``WorkerGone``.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.sandbox.worker import protocol
from grader.sandbox.worker.confinement import NOBODY

SERVER_SCRIPT = Path(__file__).resolve().parent / "worker" / "forkserver.py"
REQUEST_LIMIT = 1 << 16
F_SETPIPE_SZ, PIPE_SIZE = 1031, 1 << 20

STATUS_WAIT = 1.0  # seconds to wait for the keeper to report how a worker that stopped answering ended (a tree
# that held gigabytes takes a moment to be reaped)
WORKER_LIMITS = ("memory_mb", "cpu_seconds", "max_processes", "file_size_mb", "open_files", "scratch_mb")


class ForkServerError(OSError):
    """The fork server could not be started or refused a request."""


class ForkServer:
    """A running fork server; ``spawn`` asks it for one worker."""

    def __init__(self, address: str, info: dict, process: subprocess.Popen | None = None):
        self.address, self.info, self.process = address, info, process
        self.pool = WorkerPool()  # this process's workers of the server besides the one in use
        if process is not None:  # a server this process started: its ended workers are settled at the latest
            atexit.register(self.pool.settle)  # when the process ends, if nothing stopped the server before

    @classmethod
    def start(cls, *, hidden=(), packages=(), without=(), spares: int = 1, timeout: float = 30.0) -> ForkServer:
        """Start a server (it imports NumPy: the one start-up cost); ``hidden`` folders are masked for workers.

        ``packages`` (e.g. ``("scipy",)``) are installed packages besides NumPy
        that student code may import; their folders become readable.

        ``without`` ("landlock", "namespaces", "cgroups", "spares") leaves a
        layer out, to see the fallbacks at work on a machine that has
        everything; "rehearsal" leaves out each worker's rehearsal of calls
        before its request (``worker_main.rehearse``), to measure what it saves. ``spares`` is how many workers the server keeps made
        ahead of requests (each serves one request only).
        """
        return cls.launch(hidden=hidden, packages=packages, without=without, spares=spares,
                          timeout=timeout).ready()

    @classmethod
    def launch(cls, *, hidden=(), packages=(), without=(), spares: int = 1, timeout: float = 30.0) -> ServerLaunch:
        """``start``, but return as soon as the server's process runs: ``ready()`` waits for it to answer, so
        the caller's own start-up (its imports, reading the cases) goes on while the server imports NumPy."""
        import importlib.util

        numpy_dir = os.path.dirname(importlib.util.find_spec("numpy").origin)  # found, not imported: the caller's
        folder = tempfile.mkdtemp(prefix="mha-forkserver-")  # mode 0700: only this user may connect
        address = os.path.join(folder, "server.sock")
        command = [sys.executable, "-I", "-S", str(SERVER_SCRIPT), "--socket", address,
                   "--numpy-dir", numpy_dir, "--scratch-root", tempfile.gettempdir()]
        for path in hidden:
            command += ["--hide", str(path)]
        for name in packages:
            command += ["--package", str(name)]
        for layer in without:
            command += ["--without", str(layer)]
        command += ["--spares", str(int(spares))]
        environment = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
                       "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        with open(os.path.join(folder, "server.log"), "wb") as log:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                       cwd=folder, env=environment, start_new_session=True, close_fds=True)
        return ServerLaunch(process=process, address=address, deadline=time.monotonic() + timeout)

    @classmethod
    def attach(cls, address: str, info: dict) -> ForkServer:
        """A handle on a server another process started (what unpickling gives)."""
        return cls(address, info)

    def __reduce__(self):
        return (ForkServer.attach, (self.address, self.info))

    def spawn(self, request: dict, fds: list[int], *, timeout: float = 10.0,
              wait: bool = True) -> tuple[socket.socket, int | None]:
        """Ask for one worker; return the connection to its keeper and the worker's pid.

        With ``wait`` false, return at once (pid None): the keeper's answer is
        read later from the connection (``WorkerLink.pid``), while the worker
        is being made.
        """
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        connection.settimeout(timeout)
        try:
            connection.connect(self.address)
            socket.send_fds(connection, [json.dumps(request).encode()], fds)
            if not wait:
                return connection, None
            reply = json.loads(connection.recv(REQUEST_LIMIT) or b"{}")
        except (OSError, ValueError) as failed:
            connection.close()
            raise ForkServerError(f"the fork server did not answer: {failed}") from None
        if not isinstance(reply.get("pid"), int):
            connection.close()
            raise ForkServerError(f"the fork server refused: {reply.get('error', 'no reason given')}")
        return connection, reply["pid"]

    def stop(self) -> None:
        self.pool.settle()
        self.pool.release()
        atexit.unregister(self.pool.settle)
        if self.process is not None:
            self.process.stdin.close()  # the server ends at end of input
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process.stdout.close()
            self.process = None
            _remove_folder(self.address)


class ServerLaunch:
    """A fork server's process started by ``ForkServer.launch``, not yet heard from."""

    def __init__(self, *, process: subprocess.Popen, address: str, deadline: float):
        self.process, self.address, self.deadline = process, address, deadline
        self._server: ForkServer | None = None
        self._failed: ForkServerError | None = None  # why it did not start, for every later ``ready``

    def ready(self) -> ForkServer:
        """The running server, once it has said so (its first line); ForkServerError if it did not start."""
        if self._server is not None:
            return self._server
        if self._failed is not None:
            raise self._failed
        process, line = self.process, b""
        while not line.endswith(b"\n") and time.monotonic() < self.deadline:
            if select.select([process.stdout], [], [], max(0.0, self.deadline - time.monotonic()))[0]:
                chunk = os.read(process.stdout.fileno(), 4096)
                if not chunk:
                    break
                line += chunk
        try:
            info = json.loads(line)
        except ValueError:
            process.kill()
            process.wait()
            process.stdin.close()
            process.stdout.close()
            log_text = Path(os.path.dirname(self.address), "server.log").read_text(errors="replace")[-2000:]
            _remove_folder(self.address)
            self._failed = ForkServerError(f"the fork server did not start: {log_text or 'no output'}")
            raise self._failed from None
        self._server = ForkServer(self.address, info, process)
        return self._server

    def stop(self) -> None:
        """Stop the server, whether or not it was waited for (one that failed to start is already gone)."""
        try:
            server = self.ready()
        except ForkServerError:
            return
        server.stop()


def _remove_folder(address: str) -> None:
    """Remove a stopped server's folder: its socket, its log, and the empty mount point of its workers' tree."""
    folder = os.path.dirname(address)
    for name in ("server.sock", "server.log"):
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    for path in (os.path.join(folder, "root"), folder):
        try:
            os.rmdir(path)
        except OSError:
            pass


def _report(reply) -> tuple[int | None, str] | None:
    """(exit code, the limit it was killed for) from a keeper's report; None for its other message (the pid)."""
    if not isinstance(reply, dict):
        return None, ""
    if "error" in reply:
        return None, f"the fork server refused: {str(reply['error'])[:200]}"
    if "status" not in reply:
        return None
    status, reason = reply.get("status"), reply.get("reason")
    return (status if isinstance(status, int) else None), (str(reason)[:200] if reason else "")


class WorkerGone(Exception):
    """The worker died, overran its time, or broke the protocol."""

    def __init__(self, reason: str, *, timed_out: bool = False):
        super().__init__(reason)
        self.timed_out = timed_out


class WorkerLink:
    """A confined worker: ``spawn`` one, ``send``/``receive`` messages, ``kill`` it with all it started."""

    def __init__(self, scratch: Path, connection, pid: int | None, to_worker: int, from_worker: int):
        self.scratch, self.connection, self._pid = scratch, connection, pid
        self.to_worker, self.from_worker = to_worker, from_worker
        self.status: int | None = None  # the exit code, once the keeper has reported it
        self.reason = ""  # the limit the keeper killed it for, if it did
        self.alive = True
        self.received = bytearray()  # read from the worker but not yet taken: the start of the next message
        self.marks: list[tuple[str, float]] = []  # when the steps on this side ended (time.monotonic)
        self.ending: list[tuple[str, float]] = []  # when the keeper killed, reaped, cleaned up (its report)
        self.printed: int | None = None  # this side's own descriptor of the worker's output file (read only)

    @classmethod
    def spawn(cls, server: ForkServer, limits: dict, *, timeout: float) -> WorkerLink:
        """A fresh worker in a fresh scratch folder; ``limits`` holds the fields of ``Limits``."""
        marks = [("asked", time.monotonic())]
        scratch = Path(os.path.realpath(tempfile.mkdtemp(prefix="mha-worker-")))
        output = os.open(scratch / "output.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        # what the worker prints is read back only through this descriptor, opened before any worker exists:
        # the name is the worker's to swap (without a mount namespace it works in this very folder)
        printed = os.open(scratch / "output.txt", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        if os.geteuid() == 0:  # the worker runs as nobody and must own its folder
            os.chown(scratch, NOBODY, NOBODY)
        to_worker_read, to_worker_write = os.pipe2(os.O_CLOEXEC)
        from_worker_read, from_worker_write = os.pipe2(os.O_CLOEXEC)
        for fd in (to_worker_write, from_worker_write):
            _widen(fd)
        request = {"scratch": str(scratch), "environment": scrubbed_environment(scratch),
                   "limits": {key: limits[key] for key in WORKER_LIMITS}}
        marks.append(("scratch folder, pipes", time.monotonic()))
        try:
            connection, pid = server.spawn(request, [to_worker_read, from_worker_write, output], timeout=timeout,
                                           wait=False)
        except ForkServerError:
            for fd in (to_worker_write, from_worker_read, printed):
                os.close(fd)
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        finally:
            for fd in (to_worker_read, from_worker_write, output):
                os.close(fd)
        os.set_blocking(to_worker_write, False)
        link = cls(scratch, connection, pid, to_worker_write, from_worker_read)
        link.printed = printed
        link.marks = marks + [("request sent", time.monotonic())]
        link.limits = request["limits"]
        return link

    @property
    def pid(self) -> int:
        """The worker's pid (as the keeper reports it once the worker exists)."""
        if self._pid is None:
            try:
                self.connection.settimeout(10.0)
                reply = json.loads(self.connection.recv(REQUEST_LIMIT) or b"{}")
            except (OSError, ValueError) as failed:
                raise ForkServerError(f"the fork server did not answer: {failed}") from None
            if not isinstance(reply, dict) or type(reply.get("pid")) is not int:
                raise ForkServerError(f"the fork server refused: {reply.get('error', 'no reason given')}")
            self._pid = reply["pid"]
        return self._pid

    def report(self, *, timeout: float) -> tuple[int | None, str]:
        """Wait for the keeper's report: the exit code (negative: the signal; None if no report came) and,
        when the keeper killed the worker for a limit, which."""
        deadline = time.monotonic() + timeout
        while True:
            self.connection.settimeout(max(0.0, deadline - time.monotonic()))
            try:
                data = self.connection.recv(REQUEST_LIMIT)
                if not data:
                    return None, ""  # the keeper closed the connection without a report
                reply = json.loads(data)
            except (OSError, ValueError):
                return None, ""
            found = self._take(reply)
            if found is not None:
                return found

    def _take(self, reply) -> tuple[int | None, str] | None:
        """One message of the keeper's: its report (returned), or the worker's pid (kept)."""
        found = _report(reply)
        if found is not None:
            if isinstance(reply.get("phases"), list):
                self.ending = [(str(item[0])[:40], float(item[1])) for item in reply["phases"][:8]
                               if isinstance(item, list) and len(item) == 2 and type(item[1]) is float]
            return found
        if type(reply.get("pid")) is int:
            self._pid = reply["pid"]
        return None

    def send(self, data: bytes, deadline: float) -> None:
        """Send without ever blocking past ``deadline`` (a worker may stop reading)."""
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [self.to_worker], [], remaining)[1]:
                raise WorkerGone("the call did not finish in time", timed_out=True)
            try:
                view = view[os.write(self.to_worker, view[:PIPE_SIZE]):]  # as much as the pipe takes: one wake-up
            except BlockingIOError:
                continue
            except OSError as broken:
                raise WorkerGone(self.death_reason(broken)) from None

    def receive(self, deadline: float, limit: int) -> tuple[dict, list[bytes]]:
        """One message of at most ``limit`` bytes of blobs, by ``deadline``."""
        return read_framed(_DeadlineReader(self.from_worker, deadline, limit, self.received), limit,
                           self.death_reason)

    def death_reason(self, error: Exception | None) -> str:
        """Why the worker stopped answering; waits briefly for its own exit status."""
        if self.status is None:
            self.status, self.reason = self.report(timeout=STATUS_WAIT)
        return describe_death(self.status, error, self.reason)

    def kill(self, *, timeout: float) -> None:
        """Kill the worker and everything it started; wait until the keeper says they are gone."""
        if self.alive:
            self.ask_to_stop()
            self.finish(timeout=timeout)

    def ask_to_stop(self) -> None:
        """Ask the keeper to kill the worker and everything it started; ``finish`` reads its report."""
        if not self.alive:
            return
        self.alive = False
        if self.status is None:
            self.ending = [("asked to stop", time.monotonic())]
            try:
                self.connection.send(b"kill")
            except OSError:
                pass

    def reported(self) -> bool:
        """Whether the keeper's report has come (read now if it is waiting; never blocks)."""
        while self.status is None:
            try:
                if not select.select([self.connection], [], [], 0)[0]:
                    return False
                self.connection.settimeout(0)
                data = self.connection.recv(REQUEST_LIMIT)
                if not data:
                    return True  # the keeper closed the connection: nothing more will come
                found = self._take(json.loads(data))
            except (OSError, ValueError):
                return True  # the keeper is gone: nothing more will come
            if found is not None:
                self.status, self.reason = found
                return True
        return True

    def finish(self, *, timeout: float) -> None:
        """After ``ask_to_stop``: wait until the keeper says all is gone, then close the connection and pipes."""
        if self.status is None:
            self.status, self.reason = self.report(timeout=timeout)
        for closing in (self.connection.close, lambda: os.close(self.to_worker), lambda: os.close(self.from_worker)):
            try:
                closing()
            except OSError:
                pass

    def output_size(self) -> int:
        """Bytes the worker has printed so far, from this side's own descriptor (never the file's name)."""
        try:
            return os.fstat(self.printed).st_size if self.printed is not None else 0
        except OSError:
            return 0

    def output(self, offset: int, limit: int) -> bytes:
        """Up to ``limit`` bytes the worker printed, from byte ``offset``."""
        try:
            return os.pread(self.printed, max(0, limit), max(0, offset)) if self.printed is not None else b""
        except OSError:
            return b""

    def close_output(self) -> None:
        printed, self.printed = self.printed, None
        if printed is not None:
            os.close(printed)

    def remove_scratch(self) -> None:
        self.close_output()
        shutil.rmtree(self.scratch, ignore_errors=True)


def read_framed(reader, limit: int, death_reason) -> tuple[dict, list[bytes]]:
    """One message through ``reader`` (which gives up at a deadline); a broken one is ``WorkerGone`` with
    ``death_reason(error)``. Every worker link reads its replies through this."""
    try:
        message = protocol.read_message(reader, limit=limit)
    except WorkerGone:
        raise
    except (OSError, EOFError, ValueError, TypeError, RecursionError) as broken:
        raise WorkerGone(death_reason(broken)) from None
    if message is None or not isinstance(message[0], dict):
        raise WorkerGone(death_reason(None))
    return message


def _widen(fd: int) -> None:
    """Let a pipe hold a whole batch of calls or replies (a few hundred KiB): each 64 KiB more that would
    not fit costs both processes a wake-up."""
    import fcntl  # POSIX only: imported where used, so the module loads on every platform

    try:
        fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:  # above this machine's /proc/sys/fs/pipe-max-size: keep the default
        pass


class _DeadlineReader:
    """A file-like reader over a pipe that gives up at a deadline or a size limit.

    It reads what the pipe holds (a streamed batch sends many small messages)
    into ``buffer``, which keeps what the next message starts with.
    """

    def __init__(self, fd: int, deadline: float, limit: int, buffer: bytearray | None = None):
        self.fd, self.deadline, self.left = fd, deadline, limit + (1 << 21)  # room for the JSON header
        self.buffer = buffer if buffer is not None else bytearray()

    def read(self, size: int) -> bytes:
        if not self.buffer:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.fd], [], [], remaining)[0]:
                raise WorkerGone("the call did not finish in time", timed_out=True)
            self.buffer += os.read(self.fd, max(min(size, 1 << 20), 1 << 16))
        chunk = bytes(self.buffer[:size])
        del self.buffer[:size]
        self.left -= len(chunk)
        if self.left < 0:
            raise WorkerGone("the reply was larger than allowed")
        return chunk


def describe_death(code: int | None, error: Exception | None, reason: str = "") -> str:
    if reason.startswith("the fork server refused"):
        return reason
    if reason:
        return f"the worker was killed: {reason}"
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        hints = {"SIGKILL": " (killed: out of memory or CPU time?)", "SIGXCPU": " (CPU time limit)",
                 "SIGXFSZ": " (wrote too much output)", "SIGSEGV": " (crashed: recursion too deep?)"}
        return f"the worker was ended by {name}{hints.get(name, '')}"
    if code is not None:
        return f"the worker exited with status {code} (sys.exit or os._exit in the submission?)"
    return f"the worker broke the protocol ({str(error)[:200]})" if error else "the worker stopped answering"


def scrubbed_environment(scratch: Path) -> dict[str, str]:
    keep = {"PATH": "/usr/bin:/bin", "HOME": str(scratch), "TMPDIR": str(scratch), "LANG": "C.UTF-8"}
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if name in os.environ:
            keep[name] = os.environ[name]
    keep.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    return keep


# ---- the workers one grading process holds for a server ---------------------------------------------
CLOSING_HELD = 4  # at most this many wait to be settled; beyond it the oldest is waited for


class WorkerPool:
    """The workers this process holds for one server besides the one it grades with: the worker made ahead
    for the next submission (``reserve``/``take``), and those of graded submissions, asked to stop, whose
    keepers' reports are not read yet (``close_later``/``settle``).

    Owned by the server's handle (``ForkServer.pool``); the handle's owner settles it (``ForkServer.stop``,
    a grading lane as it ends). Workers a forked child inherited are its parent's: only the process that
    asked for a worker kills or settles it.
    """

    def __init__(self) -> None:
        self._closing: list[tuple[int, WorkerLink, Path | None]] = []  # (asking process, link, scratch folder)
        self._reserved: tuple[int, dict, WorkerLink] | None = None  # (asking process, limits, link)

    @property
    def reserved(self) -> WorkerLink | None:
        """The worker this process reserved for its next submission, if any."""
        return self._reserved[2] if self._reserved is not None and self._reserved[0] == os.getpid() else None

    @property
    def waiting(self) -> int:
        """How many ended workers of this process wait to be settled."""
        return sum(entry[0] == os.getpid() for entry in self._closing)

    def reserve(self, server: ForkServer, limits: dict, *, timeout: float) -> None:
        """Ask now for the worker the next submission graded by this process will use (made while this one is
        graded). Each worker still serves one submission only; a different ``limits`` later discards it."""
        self.release()
        try:
            link = WorkerLink.spawn(server, limits, timeout=timeout)
        except ForkServerError:
            return
        self._reserved = (os.getpid(), link.limits, link)

    def take(self, limits: dict) -> WorkerLink | None:
        """The reserved worker if it suits ``limits`` (and this process asked for it)."""
        reserved, self._reserved = self._reserved, None
        if reserved is None:
            return None
        owner, wanted, link = reserved
        if owner == os.getpid() and wanted == {key: limits[key] for key in WORKER_LIMITS}:
            return link
        if owner == os.getpid():
            link.kill(timeout=5)
            link.remove_scratch()
        return None

    def release(self) -> None:
        """Kill the reserved worker, if this process has one."""
        reserved, self._reserved = self._reserved, None
        if reserved is not None and reserved[0] == os.getpid():
            reserved[2].kill(timeout=5)
            reserved[2].remove_scratch()

    def close_later(self, link: WorkerLink, scratch: Path | None) -> None:
        """End the worker of a graded submission without waiting for its keeper to reap it and remove its
        cgroups (a few milliseconds): ``settle`` reads the report and removes the scratch folder, on the next
        worker's start, when the server stops, or when the owner of the handle is done."""
        link.ask_to_stop()
        self._closing.append((os.getpid(), link, scratch))
        self.settle(wait=False)

    def settle(self, *, wait: bool = True, timeout: float = 10.0) -> None:
        """Finish the workers ``close_later`` ended: all of them (``wait``), or those whose keeper has reported
        and the oldest beyond ``CLOSING_HELD``."""
        pending = [entry for entry in self._closing if entry[0] == os.getpid()]
        self._closing = []
        for position, (owner, link, scratch) in enumerate(pending):
            if wait or link.reported() or len(pending) - position > CLOSING_HELD:
                link.finish(timeout=timeout)
                link.close_output()
                if scratch is not None:
                    shutil.rmtree(scratch, ignore_errors=True)
            else:
                self._closing.append((owner, link, scratch))
