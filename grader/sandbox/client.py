"""The trusted side of the trust boundary: start, talk to and kill a worker.

Student code runs only in a worker forked by a fork server
(``grader/sandbox/worker/forkserver.py``), confined before any student code exists in it:
its own session and pid, network and mount namespaces (as root), resource
limits, a scratch folder, a scrubbed environment, Landlock (read only the
interpreter and NumPy, write only the scratch folder, no TCP, no signals
outside), and uid ``nobody`` (as root). Replies are read with deadlines and
size limits and decoded by ``grader.sandbox.codec``. A call that overruns its time
kills the worker and everything it started; the next call starts a fresh
worker (up to a budget of restarts per submission).

``Sandbox.open(..., server=None)`` starts a private fork server (one NumPy
import per submission); pass a shared ``ForkServer`` (``start_server()``) to
pay that once for a whole class.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from grader.sandbox.codec import BadReply, decode_arguments_after, decode_reply, encode_request
from grader.sandbox.endings import CRASH, ENDINGS, REFUSED, STOPPED, TIMEOUT, UNAVAILABLE
from grader.sandbox.isolation import SandboxWarning, describe_isolation
from grader.sandbox.link import ForkServer, ForkServerError, ServerLaunch, WorkerGone, WorkerLink
from grader.sandbox.portable import PortableServer
from grader.sandbox.servers import (STUDENT_PACKAGES, attach_server, default_hidden, hideable, launch_server,
                                    layers_left_out)
from grader.sandbox.source import SubmissionSource, read_submission
from grader.sandbox.worker import protocol

__all__ = ["CRASH", "ENDINGS", "REFUSED", "STOPPED", "TIMEOUT", "UNAVAILABLE", "CallError", "CallOutcome", "ForkServer", "ForkServerError", "Limits", "LoadReport", "Sandbox",
           "SandboxWarning", "ServerLaunch", "WorkerGone", "describe_isolation", "launch_server", "start_server"]


WORKER_KINDS = ("missing-name", "unencodable", "protocol")  # ``CallError.kind``
MAX_NAMES = 100  # names of entered functions kept per call
MAX_CELL_ERRORS = 20  # errors of notebook cells reported per submission


# Why a load failed when the worker ran out of time loading (the trusted side's words, said in the
# reader's language by grader.grading.grade).
LOAD_TIMED_OUT = "loading took too long (code at the top level of the file runs forever?)"

@dataclass(frozen=True)
class Limits:
    """Resource limits of one worker; the defaults suit this exercise."""

    call_timeout: float = 5.0  # seconds of wall clock for one call, unless the caller gives its own limit
    submission_timeout: float = 60.0  # seconds of wall clock for all calls together
    memory_mb: int = 2048  # memory of the worker and all it starts, together (and the address space of each)
    cpu_seconds: int = 60
    max_processes: int = 256  # processes of the worker's tree (without a pids cgroup: of the sandbox user)
    file_size_mb: int = 16
    scratch_mb: int = 64  # what the worker may write into its scratch folder, in all
    max_reply_mb: int = 64  # largest reply accepted from the worker
    max_restarts: int = 10  # fresh workers after the first; the grader calls a function that hung or crashed once no more
    open_files: int = 64
    start_timeout: float = 30.0  # seconds to get a confined worker (and, for a private server, to start it)
    load_timeout: float = 0.0  # seconds to load the submission; 0: twice call_timeout


@dataclass(frozen=True)
class CallError:
    """An exception raised by student code, or a failure of the worker itself."""

    type: str
    message: str
    line: int | None = None
    source_line: str = ""
    function: str | None = None
    file: str | None = None
    cell: str | None = None
    # what the worker said of a failure that is its own, not an exception of the student's: "missing-name" (no
    # such function), "unencodable" (the value could not be sent back), "protocol". Untrusted: a worker that lies
    # about it only words its own submission's feedback differently.
    kind: str | None = None

    def location(self) -> str:
        place = f"line {self.line}" if self.line else ""
        if self.cell:
            place = f"{self.cell}, {place}" if place else self.cell
        return place


@dataclass(frozen=True)
class CallOutcome:
    """What one call returned, as plain data.

    ``error`` with ``ended`` None is the student's own exception, whatever its
    type is called (a class named ``Timeout`` is still only the student's).
    ``ended`` is set by this side alone, from what it saw: a deadline it
    enforced, the worker's end, a reply it refused, a stop it made. Nothing
    the worker sends can set it.
    """

    value: object = None
    error: CallError | None = None
    args_after: tuple = ()
    ended: str | None = None  # one of ENDINGS, or None: the call came back (a value or the student's exception)
    stopped_at: str | None = None  # with ``ended == STOPPED``: the function whose entry stopped it
    peak_memory: int | None = None  # bytes the call allocated at its peak, when it was measured
    # The submission's own top-level functions and methods the call entered, in first-entry order, as the
    # worker recorded them (for a call that hung or crashed: those entered before it ended); empty when
    # unknown. Untrusted: for hints and for which checks a hang affects, never for a score.
    reached: tuple[str, ...] = ()
    seconds: float | None = None  # wall clock from sending the call (or the end of the one before) to its reply
    # A call with stand-ins (``grader.sandbox.worker.standins``): the one asked for arguments it holds no answer
    # for (``value`` is then those arguments), and the names of those the call used. Untrusted, like ``reached``.
    missing: str | None = None
    stood_in: tuple[str, ...] = ()

    @property
    def timed_out(self) -> bool:
        return self.ended == TIMEOUT

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class LoadReport:
    ok: bool
    error: CallError | None = None
    ended: str | None = None  # as ``CallOutcome.ended``: set when loading did not come back (None: it did)
    names: tuple[str, ...] = ()
    cell_errors: tuple[CallError, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def start_server(*, hidden=(), packages=STUDENT_PACKAGES, without=(), spares: int = 1,
                 isolation: str = "linux") -> ForkServer | PortableServer:
    """A fork server for many submissions; ``hidden`` folders (e.g. the output folder) are masked too.

    Student code may import the standard library, NumPy and ``packages``.
    ``without`` ("landlock", "namespaces", "cgroups", "uid-pool", "spares", "rehearsal";
    portable: "rlimit_as") leaves a layer out, to check the fallbacks
    (``MHA_SANDBOX_WITHOUT`` adds to it). ``spares``: workers kept made ahead of
    requests, each for one request (e.g. the number of submissions graded at
    once). ``isolation`` (``grader.sandbox.servers``): ``linux``, ``portable``,
    or ``auto`` (the portable worker where the Linux sandbox cannot run).
    """
    from grader.sandbox.servers import open_server

    without = (*without, *layers_left_out())
    return open_server(isolation=isolation, hidden=(*default_hidden(), *hidden), packages=packages, without=without,
                       spares=spares, limits=asdict(Limits()))


@dataclass(frozen=True)
class SandboxTimings:
    """How long the steps of a box's last worker took: for the benchmarks and the calibration, never a verdict."""

    phases: tuple[tuple[str, float], ...] = ()  # (step, seconds after the request) of the last worker's start
    load_seconds: float = 0.0  # what the last load of the submission took, after the worker's hello
    worker_seconds: float = 0.0  # what the worker itself said it spent on the exchanges of calls (untrusted)
    ending: tuple[tuple[str, float], ...] = ()  # (step, seconds after asking) of the last worker killed at once


class Sandbox:
    """A loaded submission in a worker process. Use ``Sandbox.open`` as a context manager."""

    def __init__(self, source: SubmissionSource, limits: Limits, server: ForkServer | str | None = None,
                 isolation: str = "linux"):
        self.source = source
        self.isolation_wanted = isolation  # of the private server, when no ``server`` is given
        self.limits = limits
        self.server = attach_server(server) if isinstance(server, str) else server
        self._attached = isinstance(server, str)  # a handle of this box's own: no later submission shares it
        self._own_server: ForkServer | PortableServer | None = None
        self.worker: WorkerLink | None = None
        self.scratch: Path | None = None  # the last worker's folder here (kept until close)
        self._printer: WorkerLink | None = None  # the last worker, whose output this side reads by descriptor
        self.worker_folder = ""  # the folder the worker itself works in (in its own tree: not the one above)
        self.restarts = -1
        self.spent = 0.0
        self.load_report: LoadReport | None = None
        self.isolation = "not started"
        self.hello: dict = {}  # the last worker's report of its confinement
        self.apart = True  # whether workers alive at once cannot signal each other (the worker's hello says)
        self._entered: list[str] = []  # names the current call announced as it entered them
        self._timings = SandboxTimings()
        self._worker_seconds = 0.0  # summed per reply; a record is made of it only when asked

    @property
    def timings(self) -> SandboxTimings:
        """How long the last worker's steps took (a new record each time: never edited)."""
        if self._timings.worker_seconds != self._worker_seconds:
            self._timings = replace(self._timings, worker_seconds=self._worker_seconds)
        return self._timings

    @timings.setter
    def timings(self, timings: SandboxTimings) -> None:
        self._timings, self._worker_seconds = timings, timings.worker_seconds

    @classmethod
    def open(cls, *, path: Path | None = None, source: SubmissionSource | None = None,
             limits: Limits | None = None, server: ForkServer | str | None = None,
             isolation: str = "linux") -> Sandbox:
        """Load a submission in a fresh confined worker; ``server`` is a shared ForkServer (or its address).

        Without ``server``, a private one of ``isolation`` (``grader.sandbox.servers``): ``auto`` for a
        student's own tools, which run where the Linux sandbox cannot.
        """
        box = cls(source if source is not None else read_submission(Path(path)), limits or Limits(), server,
                  isolation)
        box.load_report = box._start()
        return box

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- calls -----------------------------------------------------------------
    def call(self, function: str, *args, **kwargs) -> CallOutcome:
        """Call a module-level function of the submission."""
        return self._call({"function": function}, args, kwargs)

    def call_method(self, class_name: str, *, init: tuple = (), attributes: dict | None = None,
                    method: str | None = None, args: tuple = (), kwargs: dict | None = None,
                    calls: tuple | None = None) -> CallOutcome:
        """Build ``class_name(*init)``, set ``attributes``, then call ``method`` (or only build).

        With ``calls`` (``((path, args, kwargs), ...)``; ``args`` None reads the
        attribute), make those uses of the one instance instead; the value is
        the tuple of their results.
        """
        target = {"class": class_name, "init": list(init), "attributes": attributes or {}, "method": method}
        if calls is not None:
            target["calls"] = [list(step) for step in calls]
        return self._call(target, args, kwargs or {})

    def call_measured(self, function: str, *args, **kwargs) -> CallOutcome:
        """Like ``call``; the outcome's ``peak_memory`` is the peak the call allocated (tracemalloc)."""
        return self._call({"function": function}, args, kwargs, measure_peak_memory=True)

    def run(self, target: dict, args: tuple = (), kwargs: dict | None = None, *, timeout: float | None = None,
            stop_on: frozenset = frozenset(), reply_limit: int | None = None) -> CallOutcome:
        """One call described as a request target (see ``grader.grading.student.request_of``).

        ``timeout``: this call's own limit in seconds (default ``call_timeout``).
        ``stop_on``: names of the submission's functions that must not run: a
        call that enters one is stopped there and then (its error is
        ``Stopped``, its message the name), without waiting for its deadline.
        ``reply_limit``: the most bytes of arrays its reply may hold (default
        ``max_reply_mb``): the worker describes a larger value instead of
        sending it, and a worker that sends more anyway is ended.
        """
        return self._call(target, args, kwargs or {}, timeout=timeout, stop_on=stop_on, reply_limit=reply_limit)

    @property
    def budget_left(self) -> float:
        """Seconds left of the submission's budget (``submission_timeout``) for all calls together."""
        return self.limits.submission_timeout - self.spent

    def call_batch(self, calls: list[tuple[dict, tuple, dict]], *, timeouts: list[float] | None = None,
                   stop_on: frozenset = frozenset(), on_start=None,
                   reply_limits: list[int] | None = None) -> list[CallOutcome | None] | None:
        """Several independent calls ``(target, args, kwargs)`` in one exchange with the worker.

        The worker sends each call's reply as soon as it is ready, and each call
        is held to its own deadline: ``timeouts[i]`` seconds (default
        ``call_timeout``) from the end of the call before it. Returns one entry
        per call: its outcome, or None for the calls after one that hung,
        crashed or entered a function of ``stop_on`` (see ``run``); that one's
        outcome says what happened, and the worker is gone (the next call gets
        a fresh one). Returns None when no call could be made at all.
        ``on_start(i)`` is told when call ``i`` begins. ``reply_limits[i]``: as
        ``run``'s ``reply_limit``, for call ``i``.
        """
        if not calls or not self._ready():
            return None
        timeouts = list(timeouts) if timeouts is not None else [self.limits.call_timeout] * len(calls)
        limits = [self._reply_limit(limit) for limit in (reply_limits or [None] * len(calls))]
        blobs: list[bytes] = []
        sent: dict[int, int] = {}
        # entries are announced as they happen only when one may stop a call: otherwise each reply says them
        header = {"op": "batch", "stream": True, "names": bool(stop_on),
                  "calls": [self._request(target, args, kwargs, blobs, sent, limit)
                            for (target, args, kwargs), limit in zip(calls, limits)]}
        outcomes: list[CallOutcome | None] = [None] * len(calls)
        started = begun = time.monotonic()
        budget_end = started + self.budget_left
        index = 0
        self._entered = []
        try:
            if on_start is not None:
                on_start(0)
            self.worker.send(protocol.frame(header, blobs), min(started + timeouts[0], budget_end))
            begun = time.monotonic()
            while index < len(calls):
                reply, reply_blobs = self._receive(min(begun + timeouts[index], budget_end), stop_on, limits[index])
                if reply.get("op") != "item" or reply.get("index") != index:
                    raise WorkerGone("the worker broke the protocol (a reply that is not the next call's)")
                now = time.monotonic()
                outcomes[index] = self._outcome(reply, reply_blobs, limits[index], seconds=now - begun,
                                                sent=calls[index][1])
                index, begun, self._entered = index + 1, now, []
                if index < len(calls) and on_start is not None:
                    on_start(index)
            final, _ = self._receive(min(begun + self.limits.call_timeout, budget_end), frozenset(), 0)
            if final.get("ok") is not True or final.get("count") != len(calls):
                raise WorkerGone("the worker broke the protocol (no end to the batch)")
        except _Stopped as stopped:
            self._kill()
            outcomes[index] = self._stopped(stopped.name, time.monotonic() - begun)
        except WorkerGone as gone:
            self._kill()
            if index < len(calls):
                limit = timeouts[index] if begun + timeouts[index] <= budget_end else None
                outcomes[index] = self._gone(gone, limit, seconds=time.monotonic() - begun)
        finally:
            self.spent += time.monotonic() - started
        return outcomes

    def _ready(self) -> bool:
        """Whether a worker is there (restarting one if allowed) and time is left."""
        if self.load_report is None or not self.load_report.ok or self.spent >= self.limits.submission_timeout:
            return False
        if self.worker is None:
            return self.restarts < self.limits.max_restarts and self._start().ok
        return True

    @staticmethod
    def _request(target: dict, args: tuple, kwargs: dict, blobs: list[bytes], sent: dict | None = None,
                 reply_limit: int | None = None) -> dict:
        request = {"op": "call", "target": encode_request(target, blobs, sent),
                   "args": encode_request(list(args), blobs, sent), "kwargs": encode_request(kwargs, blobs, sent)}
        if reply_limit is not None:
            request["reply_limit"] = reply_limit
        return request

    def _reply_limit(self, wanted: int | None) -> int:
        """Bytes of arrays one reply may hold: the caller's bound, never more than ``max_reply_mb``."""
        most = self.limits.max_reply_mb << 20
        return most if wanted is None else max(0, min(int(wanted), most))

    def _call(self, target: dict, args: tuple, kwargs: dict, *, measure_peak_memory: bool = False,
              timeout: float | None = None, stop_on: frozenset = frozenset(),
              reply_limit: int | None = None) -> CallOutcome:
        timeout = self.limits.call_timeout if timeout is None else timeout
        if self.load_report is None or not self.load_report.ok:
            return CallOutcome(error=CallError("LoadError", "the submission could not be loaded"), ended=UNAVAILABLE)
        if self.budget_left <= 0:
            return self._timed_out(None)
        if self.worker is None:
            if self.restarts >= self.limits.max_restarts:
                return CallOutcome(error=CallError("WorkerGone", "the worker was stopped too often; no more calls"),
                                   ended=UNAVAILABLE)
            restarted = self._start()
            if not restarted.ok:
                if restarted.ended == TIMEOUT:
                    return self._timed_out(None)
                return CallOutcome(error=CallError("WorkerGone", f"the worker could not be restarted: "
                                                                 f"{restarted.error.message}"), ended=UNAVAILABLE)
        blobs: list[bytes] = []
        limit = self._reply_limit(reply_limit)
        header = self._request(target, args, kwargs, blobs, reply_limit=limit)
        if measure_peak_memory:
            header["measure_peak_memory"] = True
        started = time.monotonic()
        within_budget = timeout <= self.budget_left
        try:
            reply, reply_blobs = self._exchange(header, blobs, timeout=timeout, stop_on=stop_on, reply_limit=limit)
        except _Stopped as stopped:
            self._kill()
            return self._stopped(stopped.name, time.monotonic() - started)
        except WorkerGone as gone:
            self._kill()
            return self._gone(gone, timeout if within_budget else None, seconds=time.monotonic() - started)
        return self._outcome(reply, reply_blobs, limit, seconds=time.monotonic() - started, sent=args)

    def _gone(self, gone: WorkerGone, limit: float | None, seconds: float | None = None) -> CallOutcome:
        """The outcome of a call whose worker overran ``limit`` (None: the submission's budget) or died."""
        if gone.timed_out:
            return self._timed_out(limit, seconds)
        return CallOutcome(error=CallError("WorkerGone", str(gone)), ended=CRASH, reached=tuple(self._entered),
                           seconds=seconds)

    def _stopped(self, name: str, seconds: float) -> CallOutcome:
        return CallOutcome(error=CallError("Stopped", name), ended=STOPPED, stopped_at=name,
                           reached=tuple(self._entered), seconds=seconds)

    def _outcome(self, reply: dict, reply_blobs: list[bytes], limit: int, seconds: float | None = None,
                 sent: tuple = ()) -> CallOutcome:
        """The checked outcome of one call's reply (``seconds``: how long it took, as this side measured;
        ``sent``: the call's positional arguments, which the reply may say it left unchanged)."""
        if not isinstance(reply, dict):
            return CallOutcome(error=CallError("BadReply", "the worker sent a malformed reply"), ended=REFUSED,
                               seconds=seconds)
        reached = _names(reply.get("reached"))
        if not reply.get("ok"):
            return CallOutcome(error=_call_error(reply.get("error")), reached=reached, seconds=seconds,
                               stood_in=_names(reply.get("stood_in")))
        try:
            value = decode_reply(reply.get("value"), reply_blobs, limit)
            after = decode_arguments_after(reply.get("args_after", []), reply_blobs, limit, sent)
        except (BadReply, RecursionError) as bad:
            return CallOutcome(error=CallError("BadReply", str(bad)[:300]), ended=REFUSED, reached=reached,
                               seconds=seconds)
        peak = reply.get("peak_memory")
        missing = reply.get("stand_in_missing")
        return CallOutcome(value=value, args_after=after, peak_memory=peak if type(peak) is int else None,
                           reached=reached, seconds=seconds, missing=missing[:100] if type(missing) is str else None,
                           stood_in=_names(reply.get("stood_in")))

    def _timed_out(self, limit: float | None, seconds: float | None = None) -> CallOutcome:
        """A timeout, naming the limit that ended it (the message is the limit in seconds; None: the budget's)."""
        limit = self.limits.submission_timeout if limit is None or self.budget_left <= 0 else limit
        return CallOutcome(error=CallError("Timeout", f"{limit:g}"), ended=TIMEOUT, reached=tuple(self._entered),
                           seconds=seconds)

    # ---- process management ------------------------------------------------------
    def _start(self) -> LoadReport:
        """A confined worker with the submission loaded in it (``self.worker``), or why there is none."""
        self.restarts += 1
        started = time.monotonic()
        limit = self.limits.max_reply_mb << 20
        cells = json.dumps([[cell.filename, cell.label] for cell in self.source.cells]).encode()
        sources = [cell.source.encode("utf-8", "surrogatepass") for cell in self.source.cells]
        load = protocol.frame({"op": "load", "mode": self.source.mode, "reply_limit": limit}, [cells, *sources])
        for attempt in range(2):
            reserved = False
            try:  # the load is sent at once: the worker reads it right after its hello, one round trip fewer
                reserved = self._spawn()
                self.worker.send(load, started + self.limits.start_timeout)
                hello, _ = self.worker.receive(started + self.limits.start_timeout, limit)
                break
            except (ForkServerError, WorkerGone) as failed:
                self._kill()
                if not (reserved and attempt == 0):  # a reserved worker that died meanwhile: ask for a new one
                    return LoadReport(ok=False, error=CallError("SandboxError",
                                                                f"no confined worker could be started: {failed}"),
                                      ended=UNAVAILABLE)
        if hello.get("op") != "hello" or not hello.get("ok"):
            self._kill()
            reason = str(hello.get("error", "the worker did not report its confinement"))[:500]
            return LoadReport(ok=False, error=CallError("SandboxError", f"the worker refused to start: {reason}"),
                              ended=UNAVAILABLE)
        said_hello = time.monotonic()
        self.isolation = describe_isolation(hello)
        self.hello = hello
        self.apart = hello.get("workers_apart") is not False  # else the next worker starts once this one is gone
        self.worker_folder = str(hello.get("cwd", ""))[:300]
        self.timings = replace(self.timings, phases=_phases(started, self.worker.marks, hello.get("phases"),
                                                            ("hello", said_hello)))
        try:
            load_limit = self.limits.load_timeout or self.limits.call_timeout * 2
            deadline = said_hello + min(load_limit, self.limits.submission_timeout - self.spent)
            reply, _ = self.worker.receive(deadline, limit)
        except WorkerGone as gone:
            self._kill()
            reason = LOAD_TIMED_OUT if gone.timed_out else str(gone)
            return LoadReport(ok=False, error=CallError("Timeout" if gone.timed_out else "WorkerGone", reason),
                              ended=TIMEOUT if gone.timed_out else CRASH)
        finally:
            self.spent += time.monotonic() - said_hello
        self.timings = replace(self.timings, phases=self.timings.phases + (("loaded", time.monotonic() - started),),
                               load_seconds=time.monotonic() - said_hello)
        if not reply.get("ok"):
            self._kill()
            return LoadReport(ok=False, error=_call_error(reply.get("error")))
        if self.server is not None and not self._attached and self.server.info.get("spares", 1):
            # the next submission's worker is made meanwhile
            self.server.pool.reserve(self.server, asdict(self.limits), timeout=self.limits.start_timeout)
        names, cell_errors = reply.get("names", ()), reply.get("cell_errors", ())
        return LoadReport(
            ok=True, names=tuple(str(name)[:100] for name in names[:500]) if isinstance(names, list) else (),
            cell_errors=tuple(_cell_error(e) for e in cell_errors[:MAX_CELL_ERRORS]) if isinstance(cell_errors, list)
            else (),
            notes=self.source.notes,
        )

    def _spawn(self) -> bool:
        """A new worker (its hello not yet read); True when it is one reserved while the last was graded."""
        if self.server is None and self._own_server is None:
            self._own_server = start_server(isolation=self.isolation_wanted)
        server, limits = self.server or self._own_server, asdict(self.limits)
        server.pool.settle(wait=False)  # workers of submissions graded before, whose keepers have reported
        if self.scratch is not None:  # a restart: the previous worker's files go
            shutil.rmtree(self.scratch, ignore_errors=True)
        if self._printer is not None:
            self._printer.close_output()
        self.worker = server.pool.take(limits) if self.server is not None else None
        reserved = self.worker is not None
        if isinstance(server, PortableServer):  # the worker link is an interface: the portable one is another
            self.worker = server.spawn_link(limits, timeout=self.limits.start_timeout)
        elif self.worker is None:
            self.worker = WorkerLink.spawn(server, limits, timeout=self.limits.start_timeout)
        self.scratch, self._printer = self.worker.scratch, self.worker
        return reserved

    def _exchange(self, header: dict, blobs: list[bytes], *, timeout: float, stop_on: frozenset = frozenset(),
                  reply_limit: int) -> tuple[dict, list[bytes]]:
        remaining_budget = self.budget_left
        if remaining_budget <= 0:
            raise WorkerGone(f"the submission used up its {self.limits.submission_timeout:g} s in total", timed_out=True)
        started = time.monotonic()
        deadline = started + min(timeout, remaining_budget)
        self._entered = []
        try:
            self.worker.send(protocol.frame(header, blobs), deadline)
            return self._receive(deadline, stop_on, reply_limit)
        finally:
            self.spent += time.monotonic() - started

    def _receive(self, deadline: float, stop_on: frozenset, limit: int) -> tuple[dict, list[bytes]]:
        """The next reply, noting the functions the call announces as it enters them; raises ``_Stopped``
        as soon as it enters one of ``stop_on``."""
        while True:
            reply, reply_blobs = self.worker.receive(deadline, limit)
            if reply.get("op") != "entered":
                took = reply.get("worker_seconds")
                if type(took) is float and 0 <= took < 3600:
                    self._worker_seconds += took
                return reply, reply_blobs
            name = reply.get("name")  # a call announcing a function it entered, before its reply
            if type(name) is str and len(self._entered) < MAX_NAMES and name[:100] not in self._entered:
                self._entered.append(name[:100])
                if name[:100] in stop_on:
                    raise _Stopped(name[:100])

    def output_size(self) -> int:
        """How many bytes the current worker's student code has printed so far (0 after a restart)."""
        return self._printer.output_size() if self._printer is not None else 0

    def output_since(self, offset: int, limit: int = 4000) -> str:
        """What the student's code printed after byte ``offset`` of the current worker's output (its start).

        Read from the descriptor this side opened before the worker existed, never by the file's name: a
        worker that works in the same folder may swap the name for a link to any file."""
        if self._printer is None:
            return ""
        return self._printer.output(offset, limit).decode("utf-8", "replace")

    def retire(self) -> None:
        """End the worker now, for nothing it did: what its last calls taught the submission (the right
        answers a stand-in gave it) must reach no call after them. The next call starts a fresh worker with
        the submission loaded anew; that start is not one of the ``max_restarts`` a failing worker uses."""
        if self.worker is not None:
            self._kill()
            self.restarts -= 1

    def _kill(self) -> None:
        """Kill the worker and everything it started; wait until its keeper says they are gone."""
        worker, self.worker = self.worker, None
        if worker is not None:
            self._kill_now(worker)

    def _kill_now(self, worker: WorkerLink) -> None:
        asked = time.monotonic()
        worker.kill(timeout=self.limits.start_timeout)
        self.timings = replace(self.timings, ending=tuple((name, at - asked) for name, at in
                                                          [*worker.ending, ("reported", time.monotonic())]))

    def isolation_in(self, lang: str) -> str:
        """What confined the last worker, in ``lang`` (the isolation line of results and summaries)."""
        return describe_isolation(self.hello, lang=lang) if self.hello else self.isolation

    def close(self) -> None:
        worker, self.worker = self.worker, None
        if worker is not None and not self.apart:  # nothing else keeps the next worker from this one's reach
            self._kill_now(worker)
            worker = None
        if worker is not None:  # the submission is done: its worker's end is settled later (close_later)
            pool = (self.server or self._own_server).pool
            pool.close_later(worker, self.scratch)
            if self._attached:  # nothing else settles the pool of a handle this box made for itself
                pool.settle()
        elif self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        if self._printer is not None and self._printer is not worker:  # a worker ended later closes its own
            self._printer.close_output()
        self.scratch, self._printer = None, None
        if self._own_server is not None:
            self._own_server.stop()
            self._own_server = None


class _Stopped(Exception):
    """A call entered a function it was told to stop at."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _phases(started: float, *parts) -> tuple[tuple[str, float], ...]:
    """When each step of starting a worker ended, in seconds after ``started`` (the worker's own marks unchecked:
    they are only for measuring)."""
    marks = []
    for part in parts:
        if isinstance(part, tuple) and len(part) == 2 and isinstance(part[0], str):
            part = [part]
        for item in part if isinstance(part, list) else ():
            if isinstance(item, (list, tuple)) and len(item) == 2 and type(item[1]) in (int, float):
                marks.append((str(item[0])[:40], float(item[1]) - started))
    return tuple(marks[:40])


def _names(data) -> tuple[str, ...]:
    """The ``reached`` list of a reply, bounded; anything malformed is unknown (empty)."""
    if not isinstance(data, list):
        return ()
    return tuple(dict.fromkeys(name[:100] for name in data[:MAX_NAMES] if type(name) is str))


def _cell_error(data) -> CallError:
    """A cell's error as a note: shorter than a call's, since a notebook may have many."""
    error = _call_error(data)
    return replace(error, message=error.message[:300])


def _call_error(data) -> CallError:
    if not isinstance(data, dict):
        return CallError("WorkerGone", "the worker sent a malformed error")

    def text(key: str, limit: int = 2000) -> str:
        value = data.get(key)
        return str(value)[:limit] if value is not None else ""

    line = data.get("line")
    kind = data.get("kind")
    return CallError(
        kind=kind if kind in WORKER_KINDS else None, type=text("type", 100) or "Error", message=text("message"),
        line=line if type(line) is int else None, source_line=text("source_line", 200),
        function=text("function", 100) or None, file=text("file", 300) or None, cell=text("cell", 100) or None,
    )
