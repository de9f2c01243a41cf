"""The trusted side of the trust boundary: start, talk to and kill a worker.

Student code runs only in ``grader/worker_main.py``, a separate process in
its own session and scratch folder, under resource limits. Replies are read
with size limits; arrays are loaded with ``allow_pickle=False`` after their
``.npy`` header (dtype, shape, size) has been checked. A call that overruns
its time kills the worker and everything it started; the next call starts a
fresh worker (up to a budget of restarts per submission).
"""

from __future__ import annotations

import io
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader import worker_main
from grader.submission import SubmissionSource, read_submission

WORKER_SCRIPT = Path(worker_main.__file__)


@dataclass(frozen=True)
class Limits:
    """Resource limits of one worker; the defaults suit this exercise."""

    call_timeout: float = 5.0  # seconds of wall clock for one call
    submission_timeout: float = 60.0  # seconds of wall clock for all calls together
    memory_mb: int = 2048  # address space of the worker
    cpu_seconds: int = 60
    max_processes: int = 256
    file_size_mb: int = 16
    max_reply_mb: int = 64  # largest reply accepted from the worker
    max_restarts: int = 4


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

    def location(self) -> str:
        place = f"line {self.line}" if self.line else ""
        if self.cell:
            place = f"{self.cell}, {place}" if place else self.cell
        return place


@dataclass(frozen=True)
class CallOutcome:
    """What one call returned, as plain data."""

    value: object = None
    error: CallError | None = None
    args_after: tuple = ()
    timed_out: bool = False
    peak_memory: int | None = None  # bytes the call allocated at its peak, when it was measured

    @property
    def ok(self) -> bool:
        return self.error is None


class WorkerGone(Exception):
    """The worker died, overran its time, or broke the protocol."""

    def __init__(self, reason: str, *, timed_out: bool = False):
        super().__init__(reason)
        self.timed_out = timed_out


@dataclass
class LoadReport:
    ok: bool
    error: CallError | None = None
    names: tuple[str, ...] = ()
    cell_errors: tuple[CallError, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


class Sandbox:
    """A loaded submission in a worker process. Use ``Sandbox.open`` as a context manager."""

    def __init__(self, source: SubmissionSource, limits: Limits):
        self.source = source
        self.limits = limits
        self.process: subprocess.Popen | None = None
        self.scratch: Path | None = None
        self.restarts = -1
        self.spent = 0.0
        self.load_report: LoadReport | None = None
        self.isolation = "process, resource limits, scratch folder"

    @classmethod
    def open(cls, *, path: Path | None = None, source: SubmissionSource | None = None,
             limits: Limits | None = None) -> Sandbox:
        box = cls(source if source is not None else read_submission(Path(path)), limits or Limits())
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

        With ``calls`` (``((path, args, kwargs), ...)``), make those calls in order on the one
        instance instead and return every result as a tuple; ``args`` None reads the attribute at
        the dotted ``path``.
        """
        target = {"class": class_name, "init": list(init), "attributes": attributes or {}, "method": method}
        if calls is not None:
            target["calls"] = [(str(path), None if step_args is None else tuple(step_args), dict(step_kwargs or {}))
                               for path, step_args, step_kwargs in calls]
        return self._call(target, args, kwargs or {})

    def call_measured(self, function: str, *args, **kwargs) -> CallOutcome:
        """Like ``call``; the outcome's ``peak_memory`` is the peak the call allocated (tracemalloc)."""
        return self._call({"function": function}, args, kwargs, {"measure_peak_memory": True})

    def _call(self, target: dict, args: tuple, kwargs: dict, extra: dict | None = None) -> CallOutcome:
        if self.load_report is None or not self.load_report.ok:
            return CallOutcome(error=CallError("LoadError", "the submission could not be loaded"))
        if self.process is None:
            if self.restarts >= self.limits.max_restarts:
                return CallOutcome(error=CallError("WorkerGone", "the worker was stopped too often; no more calls"))
            self._start()
        blobs: list[bytes] = []
        header = {
            "op": "call",
            "target": _encode(target, blobs),
            "args": _encode(list(args), blobs),
            "kwargs": _encode(kwargs, blobs),
            **{key: _encode(value, blobs) for key, value in (extra or {}).items()},
        }
        try:
            reply, reply_blobs = self._exchange(header, blobs, timeout=self.limits.call_timeout)
        except WorkerGone as gone:
            self._kill()
            if gone.timed_out:
                return CallOutcome(error=CallError("Timeout", f"{self.limits.call_timeout:g}"), timed_out=True)
            return CallOutcome(error=CallError("WorkerGone", str(gone)))
        if not reply.get("ok"):
            return CallOutcome(error=_call_error(reply.get("error")))
        try:
            value = decode_value(reply.get("value"), reply_blobs, self.limits)
            after = decode_value({"__tuple__": reply.get("args_after", [])}, reply_blobs, self.limits)
        except ValueError as bad:
            return CallOutcome(error=CallError("BadReply", str(bad)))
        peak = reply.get("peak_memory")
        return CallOutcome(value=value, args_after=after, peak_memory=peak if type(peak) is int else None)

    # ---- process management ------------------------------------------------------
    def _start(self) -> LoadReport:
        self.restarts += 1
        self.scratch = Path(tempfile.mkdtemp(prefix="mha-worker-"))
        to_worker_read, to_worker_write = os.pipe()
        from_worker_read, from_worker_write = os.pipe()
        output = open(self.scratch / "output.txt", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(WORKER_SCRIPT), str(to_worker_read), str(from_worker_write)],
            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            pass_fds=(to_worker_read, from_worker_write), cwd=self.scratch,
            env=_scrubbed_environment(self.scratch), start_new_session=True,
            preexec_fn=_limiter(self.limits),
        )
        output.close()
        os.close(to_worker_read)
        os.close(from_worker_write)
        self._to_worker = os.fdopen(to_worker_write, "wb")
        self._from_worker = from_worker_read
        header = {"op": "load", "mode": self.source.mode,
                  "cells": [cell.__dict__ for cell in self.source.cells]}
        try:
            reply, _ = self._exchange(header, [], timeout=self.limits.call_timeout * 2)
        except WorkerGone as gone:
            self._kill()
            reason = "loading took too long (code at the top level of the file runs forever?)" if gone.timed_out else str(gone)
            return LoadReport(ok=False, error=CallError("Timeout" if gone.timed_out else "WorkerGone", reason))
        if not reply.get("ok"):
            self._kill()
            return LoadReport(ok=False, error=_call_error(reply.get("error")))
        return LoadReport(
            ok=True, names=tuple(reply.get("names", ())),
            cell_errors=tuple(_call_error(e) for e in reply.get("cell_errors", ())),
            notes=self.source.notes,
        )

    def _exchange(self, header: dict, blobs: list[bytes], *, timeout: float) -> tuple[dict, list[bytes]]:
        remaining_budget = self.limits.submission_timeout - self.spent
        if remaining_budget <= 0:
            raise WorkerGone(f"the submission used up its {self.limits.submission_timeout:g} s in total", timed_out=True)
        deadline_span = min(timeout, remaining_budget)
        started = time.monotonic()
        try:
            worker_main.write_message(self._to_worker, header, blobs)
            reader = _DeadlineReader(self._from_worker, started + deadline_span, self.limits.max_reply_mb << 20)
            message = worker_main.read_message(reader, limit=self.limits.max_reply_mb << 20)
        except WorkerGone:
            raise
        except (OSError, EOFError, ValueError, UnicodeDecodeError) as broken:
            code = self.process.poll() if self.process else None
            raise WorkerGone(_death_reason(code, broken)) from None
        finally:
            self.spent += time.monotonic() - started
        if message is None or not isinstance(message[0], dict):
            raise WorkerGone(_death_reason(self.process.wait(timeout=1) if self.process else None, None))
        return message

    def output(self, limit: int = 4000) -> str:
        """What the student's code printed (the start of it)."""
        if self.scratch is None or not (self.scratch / "output.txt").exists():
            return ""
        with open(self.scratch / "output.txt", "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")

    def _kill(self) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()
            self.process = None
            try:
                self._to_worker.close()
            except OSError:
                pass
            os.close(self._from_worker)

    def close(self) -> None:
        self._kill()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


class _DeadlineReader:
    """A file-like reader over a pipe that gives up at a deadline or a size limit."""

    def __init__(self, fd: int, deadline: float, limit: int):
        self.fd, self.deadline, self.left = fd, deadline, limit + 4096

    def read(self, size: int) -> bytes:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0 or not select.select([self.fd], [], [], remaining)[0]:
            raise WorkerGone("the call did not finish in time", timed_out=True)
        chunk = os.read(self.fd, min(size, 1 << 20))
        self.left -= len(chunk)
        if self.left < 0:
            raise WorkerGone("the reply was larger than allowed")
        return chunk


def _death_reason(code: int | None, error: Exception | None) -> str:
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        hints = {"SIGKILL": " (killed: out of memory or CPU time?)", "SIGXCPU": " (CPU time limit)",
                 "SIGXFSZ": " (wrote too much output)", "SIGSEGV": " (crashed)"}
        return f"the worker was ended by {name}{hints.get(name, '')}"
    if code is not None:
        return f"the worker exited with status {code} (sys.exit or os._exit in the submission?)"
    return f"the worker broke the protocol ({error})" if error else "the worker stopped answering"


def _scrubbed_environment(scratch: Path) -> dict[str, str]:
    keep = {"PATH": "/usr/bin:/bin", "HOME": str(scratch), "TMPDIR": str(scratch), "LANG": "C.UTF-8"}
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if name in os.environ:
            keep[name] = os.environ[name]
    keep.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    return keep


def _limiter(limits: Limits):
    def apply() -> None:
        import resource

        def cap(kind: int, value: int) -> None:
            try:
                resource.setrlimit(kind, (value, value))
            except (ValueError, OSError):
                pass

        cap(resource.RLIMIT_AS, limits.memory_mb << 20)
        cap(resource.RLIMIT_CPU, limits.cpu_seconds)
        cap(resource.RLIMIT_NPROC, limits.max_processes)
        cap(resource.RLIMIT_FSIZE, limits.file_size_mb << 20)
        cap(resource.RLIMIT_CORE, 0)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long output fails a write, not the worker

    return apply


# ---- values across the boundary ------------------------------------------------
_ALLOWED_KINDS = "biuf"


def _encode(value, blobs: list[bytes]):
    if isinstance(value, np.ndarray):
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)
        blobs.append(buffer.getvalue())
        return {"__array__": len(blobs) - 1}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(item, blobs) for item in value]}
    if isinstance(value, list):
        return [_encode(item, blobs) for item in value]
    if isinstance(value, dict):
        return {key: _encode(item, blobs) for key, item in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


class ForeignObject:
    """Something the worker returned that is not plain numeric data."""

    def __init__(self, description: str):
        self.description = description

    def __repr__(self) -> str:
        return f"<{self.description}>"


def decode_value(tree, blobs: list[bytes], limits: Limits):
    """Rebuild a reply's value; arrays are checked before they are loaded."""
    if isinstance(tree, dict):
        if "__array__" in tree:
            index = tree["__array__"]
            if not isinstance(index, int) or not 0 <= index < len(blobs):
                raise ValueError("reply names an array that is not there")
            return load_checked_array(blobs[index], limits.max_reply_mb << 20)
        if "__tuple__" in tree:
            return tuple(decode_value(item, blobs, limits) for item in tree["__tuple__"])
        if "__scalar__" in tree:
            return np.dtype(str(tree.get("dtype", "float64"))).type(tree["__scalar__"]) \
                if str(tree.get("dtype", "")) in _SCALAR_DTYPES else ForeignObject("a numpy scalar")
        if "__object__" in tree:
            return ForeignObject(str(tree["__object__"])[:200])
        raise ValueError("reply holds an unknown mapping")
    if isinstance(tree, list):
        return [decode_value(item, blobs, limits) for item in tree]
    if tree is None or type(tree) in (bool, int, float, str):
        return tree
    raise ValueError("reply holds an unknown value")


_SCALAR_DTYPES = {"float64", "float32", "float16", "int64", "int32", "bool"}


def load_checked_array(blob: bytes, max_bytes: int) -> np.ndarray:
    """Load ``.npy`` bytes after checking dtype, shape and size in the header."""
    stream = io.BytesIO(blob)
    try:
        version = np.lib.format.read_magic(stream)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran_order, dtype = read_header(stream)
    except Exception as bad:  # any malformed header is a bad reply
        raise ValueError(f"malformed array in reply: {bad}") from None
    if dtype.hasobject or dtype.kind not in _ALLOWED_KINDS or dtype.fields is not None:
        raise ValueError(f"array of dtype {dtype} is not plain numeric data")
    count = 1
    for extent in shape:
        count *= extent
    if count * dtype.itemsize > max_bytes or count * dtype.itemsize != len(blob) - stream.tell():
        raise ValueError(f"array of shape {shape} does not match its {len(blob)} bytes")
    stream.seek(0)
    return np.load(stream, allow_pickle=False)


def _call_error(data) -> CallError:
    if not isinstance(data, dict):
        return CallError("WorkerGone", "the worker sent a malformed error")
    def text(key: str, limit: int = 2000) -> str:
        value = data.get(key)
        return str(value)[:limit] if value is not None else ""
    line = data.get("line")
    return CallError(
        type=text("type", 100) or "Error", message=text("message"),
        line=line if isinstance(line, int) else None, source_line=text("source_line", 200),
        function=text("function", 100) or None, file=text("file", 300) or None, cell=text("cell", 100) or None,
    )
