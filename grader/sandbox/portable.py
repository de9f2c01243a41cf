"""The portable worker link: where the Linux layers are missing (Windows, macOS, Linux without them).

``PortableServer`` stands where ``grader.sandbox.link.ForkServer`` stands: it
has no process of its own; each worker is a fresh interpreter started the
portable way (``subprocess``, spawn), running ``worker/portable_main.py``, and
one is kept started ahead (it imports NumPy while the trusted side prepares).
``PortableLink`` is one worker, with the calls of ``WorkerLink``: spoken to
over its stdin and stdout with the same protocol and codec (never pickle),
under deadlines (a reader and a writer thread per worker: ``select`` does not
take pipes on Windows), and ended with its whole process tree: its own
session's process group on POSIX, every descendant found by psutil on all
platforms (``taskkill /T`` where psutil is missing). Memory is bounded by
``RLIMIT_AS`` where the platform enforces it, else by a watchdog here over the
tree's resident memory (Windows, macOS); the scratch folder by the same watchdog.

It confines nothing else: the worker can read what its user can read and
reach the network. That is enough for a student checking their own code on
their own machine; ``mha grade`` refuses it unless asked (``--isolation portable``).
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from grader.sandbox.link import (STATUS_WAIT, WORKER_LIMITS, ForkServerError, WorkerGone, WorkerLink, WorkerPool,
                                 describe_death, read_framed, scrubbed_environment)
from grader.sandbox.pipes import DeadlineStream, PipeGaveUp, Reader, Writer
from grader.sandbox.tree import TOKEN_VARIABLE, end_tree, tree_memory, wait_gone
from grader.sandbox.windows_job import WindowsJob
from grader.sandbox.worker.cgroups import folder_size

PORTABLE_SCRIPT = Path(__file__).resolve().parent / "worker" / "portable_main.py"
ADDRESS_PREFIX = "portable:"  # the address of a portable server: its settings, so a grading lane can attach
WATCH_INTERVAL = 0.05  # seconds between two looks of the watchdog
WINDOWS_KEEP = ("SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE")


NOT_CONFINED = ("the portable worker does not protect this machine from hostile code: it reads what your user "
                "can read and reaches the network")


def describe_portable(hello: dict, *, lang: str = "en") -> str:
    """The isolation line of a portable worker, from its own ``hello`` and what this side added to it (``kept``),
    in ``lang``; no Python warning: the caller decides whom to tell."""
    from grader.sandbox.isolation_texts import say as text

    def say(key: str, lang: str, **params) -> str:
        return text(key, lang=lang, **params)

    platform = {"win32": "Windows", "darwin": "macOS"}.get(str(hello.get("platform")), str(hello.get("platform")))
    kept = hello.get("kept") if isinstance(hello.get("kept"), dict) else {}
    parts = [say("portable", lang, platform=platform[:40])]
    if hello.get("session"):
        parts.append(say("session", lang))
    rlimits = [str(name)[:20] for name in hello.get("rlimits", ())[:8]] if isinstance(hello.get("rlimits"), list) \
        else []
    parts.append(say("portable_rlimits", lang, names=say("list_separator", lang).join(rlimits)) if rlimits
                 else say("portable_no_rlimits", lang))
    if kept.get("job"):
        parts.append(say("portable_job", lang))
    if kept.get("memory_watchdog"):
        parts.append(say("memory_watched", lang))
    ended = say("portable_ended_group" if kept.get("process_group") else "portable_ended", lang)
    parts.append(say("portable_tree_ended", lang, how=say("portable_job_and", lang, what=ended) if kept.get("job")
                     else ended))
    return say("separator", lang).join(parts) + say("warning", lang, text=say("portable_not_confined", lang))


class PortableServer:
    """Starts portable workers; keeps ``spares`` of them started ahead, for the next ``spawn_link``."""

    info = {"spares": 0, "portable": True}  # 0: the client reserves nothing; the spare is kept here

    def __init__(self, *, numpy_dir: str, packages: tuple[str, ...] = (), spares: int = 1, reason: str = "",
                 without: tuple[str, ...] = ()):
        self.numpy_dir, self.packages, self.spares = numpy_dir, tuple(packages), int(spares)
        self.reason, self.without = reason, tuple(without)  # why not the Linux sandbox; layers left out
        self.address = ADDRESS_PREFIX + json.dumps({"numpy_dir": numpy_dir, "packages": list(self.packages),
                                                    "reason": reason, "without": list(self.without)})
        self._spares: list[tuple[int, dict, PortableLink]] = []  # (owning process, limits, link), oldest first
        self.pool = WorkerPool()  # this process's ended workers of this server, settled later

    @classmethod
    def start(cls, *, packages=(), spares: int = 1, reason: str = "", without=(), limits: dict | None = None
              ) -> PortableServer:
        """A server whose first worker starts now (with ``limits``, the fields of ``Limits``, when given)."""
        import numpy

        server = cls(numpy_dir=os.path.dirname(numpy.__file__), packages=packages, spares=spares, reason=reason,
                     without=without)
        if limits is not None:
            server._keep_spares(limits)
        atexit.register(server.pool.settle)  # at the latest when the process ends, if nothing stopped it before
        return server

    @classmethod
    def attach(cls, address: str) -> PortableServer:
        """The server of ``address`` in another process (a grading lane): same settings, its own workers, no
        spare (nothing would stop it)."""
        settings = json.loads(address[len(ADDRESS_PREFIX):])
        return cls(numpy_dir=str(settings["numpy_dir"]), packages=tuple(settings.get("packages", ())), spares=0,
                   reason=str(settings.get("reason", "")), without=tuple(settings.get("without", ())))

    def __reduce__(self):
        return (PortableServer.attach, (self.address,))

    def spawn_link(self, limits: dict, *, timeout: float) -> PortableLink:
        """A worker for one submission: the spare when it suits ``limits``, else a fresh one; the next spare
        starts now."""
        wanted = {key: limits[key] for key in WORKER_LIMITS}
        link = None
        while self._spares and link is None:
            owner, kept, spare = self._spares.pop(0)
            if owner == os.getpid() and kept == wanted and spare.process.poll() is None:
                link = spare
            elif owner == os.getpid():
                spare.kill(timeout=5)
                spare.remove_scratch()
        if link is None:
            link = PortableLink.spawn(self, wanted)
        self._keep_spares(wanted)
        return link

    def _keep_spares(self, limits: dict) -> None:
        """Start workers until ``spares`` wait (each imports NumPy meanwhile, on a core of its own if free)."""
        wanted = {key: limits[key] for key in WORKER_LIMITS}
        while len(self._spares) < self.spares:
            try:
                self._spares.append((os.getpid(), wanted, PortableLink.spawn(self, wanted)))
            except ForkServerError:
                return

    def stop(self) -> None:
        self.pool.settle()
        atexit.unregister(self.pool.settle)
        spares, self._spares = self._spares, []
        for owner, _, link in spares:
            if owner == os.getpid():
                link.kill(timeout=5)
                link.remove_scratch()


def portable_environment(scratch: Path) -> dict[str, str]:
    """The Linux worker's scrubbed environment; on Windows also what the interpreter needs to start."""
    keep = scrubbed_environment(scratch)
    if os.name == "nt":
        keep.update({name: os.environ[name] for name in WINDOWS_KEEP if name in os.environ})
        keep.update(PATH=os.environ.get("PATH", ""), TEMP=str(scratch), TMP=str(scratch), USERPROFILE=str(scratch))
    return keep


def _interpreter() -> str:
    """The interpreter a worker runs: on Windows the base one (a venv's python.exe is a launcher that starts
    it as a child: one process more to end); ``-I -S`` needs nothing of the venv."""
    base = getattr(sys, "_base_executable", None)
    if os.name == "nt" and base and os.path.isfile(base):
        return base
    return sys.executable


class PortableLink:
    """A portable worker: ``spawn`` one, ``send``/``receive`` messages, ``kill`` it with all it started."""

    def __init__(self, process: subprocess.Popen, scratch: Path, limits: dict, marks: list, *, watch_memory: bool,
                 token: str, job: WindowsJob | None = None, grouped: bool = False, printed=None):
        self.process, self.scratch, self.limits, self.marks = process, scratch, limits, marks
        self.printed = printed  # this side's own read handle of the worker's output file
        self.token, self.started = token, time.time()  # what finds its orphans where no process group does
        self.job, self.grouped = job, grouped  # a Windows Job Object holds its tree; a process group (POSIX)
        self.status: int | None = None  # the exit code, once the worker is reaped
        self.reason = ""  # the limit the watchdog ended it for, if it did
        self.alive = True
        self.ending: list[tuple[str, float]] = []
        self._remaining: list = []  # the descendants ended with it, for ``finish`` to wait for
        self.tree_memory = watch_memory  # whether the watchdog sums the tree's memory (no RLIMIT_AS here)
        self._incoming = Reader(process.stdout.fileno())
        self._outgoing = Writer(process.stdin.fileno())
        self._stop_watching = threading.Event()
        threading.Thread(target=self._watch, name="mha-worker-watchdog", daemon=True).start()

    @classmethod
    def spawn(cls, server: PortableServer, limits: dict) -> PortableLink:
        marks = [("asked", time.monotonic())]
        scratch = Path(os.path.realpath(tempfile.mkdtemp(prefix="mha-worker-")))
        command = [_interpreter(), "-I", "-S", str(PORTABLE_SCRIPT), "--numpy-dir", server.numpy_dir,
                   "--limits", json.dumps(_worker_limits(limits, server.without))]
        for name in server.packages:
            command += ["--package", str(name)]
        options: dict = {}  # by what the platform has, not its name: an emulated Windows runs here too
        if hasattr(os, "setsid"):
            options["start_new_session"] = True  # its own process group: killpg ends what it leaves behind
        elif os.name == "nt":
            options["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW
        printed = None
        try:
            environment = portable_environment(scratch)
            environment[TOKEN_VARIABLE] = secrets.token_hex(8)  # inherited: finds orphans where no group does
            with open(scratch / "output.txt", "xb") as output:
                # what the worker prints is read back through this side's own handle, opened before it exists
                printed = open(scratch / "output.txt", "rb")  # noqa: SIM115 - the link closes it
                process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=output,
                                           cwd=scratch, env=environment, close_fds=True, bufsize=0, **options)
        except OSError as failed:
            if printed is not None:
                printed.close()
            shutil.rmtree(scratch, ignore_errors=True)
            raise ForkServerError(f"no worker process could be started: {failed}") from None
        marks.append(("process started", time.monotonic()))
        job = WindowsJob.make(memory_mb=limits["memory_mb"], max_processes=limits["max_processes"])
        if job is not None and not job.assign(process):
            job.close()
            job = None
        # RLIMIT_AS bounds each process where POSIX enforces it (not macOS), a Job Object the tree on Windows;
        # elsewhere the watchdog sums the tree
        watch_memory = job is None and (not _address_space_enforced() or "rlimit_as" in server.without)
        return cls(process, scratch, dict(limits), marks, watch_memory=watch_memory, token=environment[TOKEN_VARIABLE],
                   job=job, grouped="start_new_session" in options, printed=printed)

    @property
    def pid(self) -> int:
        return self.process.pid

    # ---- messages -------------------------------------------------------------------------------
    def send(self, data: bytes, deadline: float) -> None:
        """Send without ever waiting past ``deadline`` (a worker may stop reading)."""
        try:
            failed = self._outgoing.send(data, deadline)
        except PipeGaveUp as gave_up:
            raise WorkerGone(str(gave_up), timed_out=gave_up.timed_out) from None
        if failed is not None:
            raise WorkerGone(self.death_reason(failed)) from None

    def receive(self, deadline: float, limit: int) -> tuple[dict, list[bytes]]:
        """One message of at most ``limit`` bytes of blobs, by ``deadline``."""
        try:
            header, blobs = read_framed(DeadlineStream(self._incoming, deadline, limit), limit, self.death_reason)
        except PipeGaveUp as gave_up:
            raise WorkerGone(str(gave_up), timed_out=gave_up.timed_out) from None
        if header.get("op") == "hello":  # what this side keeps in force, beside what the worker says of itself
            header["kept"] = {"job": self.job is not None, "memory_watchdog": self.tree_memory,
                              "process_group": self.grouped}
        return header, blobs

    def death_reason(self, error: Exception | None) -> str:
        """Why the worker stopped answering; waits briefly for its own exit status."""
        if self.status is None:
            try:
                self.status = self.process.wait(timeout=STATUS_WAIT)
            except subprocess.TimeoutExpired:
                pass
        return describe_death(self.status, error, self.reason)

    # ---- the end ------------------------------------------------------------------------------------
    kill = WorkerLink.kill  # the interface's own composition: ``ask_to_stop``, then ``finish``

    def ask_to_stop(self) -> None:
        """End the worker's process tree now (without waiting for it); ``finish`` waits and closes."""
        if not self.alive:
            return
        self.alive = False
        self.ending = [("asked to stop", time.monotonic())]
        self._remaining = self._end_tree()
        self.ending.append(("kill sent", time.monotonic()))

    def reported(self) -> bool:
        """Whether the worker has ended (never waits)."""
        if self.status is None:
            self.status = self.process.poll()
        return self.status is not None

    def finish(self, *, timeout: float) -> None:
        """After ``ask_to_stop``: wait until the worker and what it started are gone, then close the pipes."""
        deadline = time.monotonic() + timeout
        try:
            self.status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        self.ending.append(("worker reaped", time.monotonic()))
        wait_gone(self._remaining, max(0.0, deadline - time.monotonic()))
        self._stop_watching.set()
        self._outgoing.close()
        if self.job is not None:
            self.job.close()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def output_size(self) -> int:
        """Bytes the worker has printed so far, from this side's own handle (never the file's name)."""
        try:
            return os.fstat(self.printed.fileno()).st_size if self.printed is not None else 0
        except (OSError, ValueError):
            return 0

    def output(self, offset: int, limit: int) -> bytes:
        """Up to ``limit`` bytes the worker printed, from byte ``offset`` (no ``os.pread`` on Windows)."""
        try:
            self.printed.seek(max(0, offset))
            return self.printed.read(max(0, limit))
        except (OSError, ValueError, AttributeError):
            return b""

    def close_output(self) -> None:
        printed, self.printed = self.printed, None
        if printed is not None:
            printed.close()

    def remove_scratch(self) -> None:
        self.close_output()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _end_tree(self) -> list:
        if self.job is not None:
            self.job.terminate()  # every process of the job, orphans included
        return end_tree(self.process, token=self.token, since=self.started)

    # ---- the watchdog --------------------------------------------------------------------------------
    def _watch(self) -> None:
        """End the tree when it holds more memory than allowed (where no rlimit bounds it) or writes more than
        its scratch folder may hold."""
        try:
            self._look_until_over()
        except Exception:  # noqa: BLE001 - a watchdog that cannot look ends the worker rather than a traceback
            self.reason = self.reason or "its memory could not be watched"
            self._end_tree()

    def _look_until_over(self) -> None:
        memory_limit, scratch_limit = self.limits["memory_mb"] << 20, self.limits["scratch_mb"] << 20
        looks = 0
        while not self._stop_watching.wait(WATCH_INTERVAL):
            looks += 1
            reason = ""
            if self.tree_memory:
                used = tree_memory(self.process.pid, children=looks % 4 == 0)
                if used > memory_limit:
                    reason = f"its processes held {used >> 20} MiB together, over the {memory_limit >> 20} MiB limit"
            if not reason and looks % 4 == 0 and folder_size(str(self.scratch), scratch_limit) > scratch_limit:
                reason = f"it wrote more than {scratch_limit >> 20} MiB into its scratch folder"
            if reason:
                self.reason = reason
                self._end_tree()
                return
            if self.process.poll() is not None:
                return


def _worker_limits(limits: dict, without: tuple[str, ...]) -> dict:
    """The rlimits the worker sets; ``without`` "rlimit_as" leaves memory to the watchdog (as on Windows)."""
    chosen = {key: limits[key] for key in WORKER_LIMITS}
    if "rlimit_as" in without:
        chosen["memory_mb"] = 1 << 30  # MiB: no bound in practice
    return chosen


def _address_space_enforced() -> bool:
    """Whether an ``RLIMIT_AS`` set in the worker bounds its memory: POSIX has it, macOS ignores it."""
    if sys.platform == "darwin":
        return False
    try:
        import resource

        return hasattr(resource, "RLIMIT_AS")
    except ImportError:
        return False
