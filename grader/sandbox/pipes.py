"""Pipes with deadlines on every platform: a reader and a writer thread per worker (the portable worker's).

``link._DeadlineReader`` waits with ``select``, which Windows refuses for
pipes; here a thread reads the worker's stdout as it comes (at most
``READ_AHEAD`` bytes ahead: a worker that floods waits), another writes to its
stdin, and the caller waits on them until its deadline.
"""

from __future__ import annotations

import os
import threading
import time

READ_CHUNK, READ_AHEAD = 1 << 18, 1 << 22  # bytes per read; bytes read ahead before the reader waits


class PipeGaveUp(Exception):
    """A read or a write that gave up: at its deadline (``timed_out``), or past its size limit. Not an
    ``OSError``: the protocol's reader lets it through, and the link says what it means."""

    def __init__(self, reason: str, *, timed_out: bool = False):
        super().__init__(reason)
        self.timed_out = timed_out


class Reader:
    """Reads the worker's stdout in a thread of its own, so a read can give up at a deadline on every platform.

    ``link._DeadlineReader`` waits with ``select``, which Windows refuses for pipes."""

    def __init__(self, fd: int):
        self.fd, self.buffer, self.ended = fd, bytearray(), False
        self.ready = threading.Condition()
        threading.Thread(target=self._run, name="mha-worker-reader", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self.ready:
                while len(self.buffer) >= READ_AHEAD:  # a worker that floods waits until what it sent is taken
                    self.ready.wait()
            try:
                chunk = os.read(self.fd, READ_CHUNK)
            except OSError:
                chunk = b""
            with self.ready:
                if chunk:
                    self.buffer += chunk
                else:
                    self.ended = True
                self.ready.notify_all()
            if not chunk:
                return

    def take(self, size: int, deadline: float) -> bytes:
        """Up to ``size`` bytes as soon as there are some; b"" at the end; PipeGaveUp at ``deadline``."""
        with self.ready:
            while not self.buffer and not self.ended:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise PipeGaveUp("the call did not finish in time", timed_out=True)
                self.ready.wait(remaining)
            chunk = bytes(self.buffer[:size])
            del self.buffer[:size]
            self.ready.notify_all()
            return chunk


class DeadlineStream:
    """A file-like view of a ``Reader`` for ``protocol.read_message``: gives up at a deadline or a size limit."""

    def __init__(self, reader: Reader, deadline: float, limit: int):
        self.reader, self.deadline, self.left = reader, deadline, limit + (1 << 21)  # room for the JSON header

    def read(self, size: int) -> bytes:
        chunk = self.reader.take(size, self.deadline)
        self.left -= len(chunk)
        if self.left < 0:
            raise PipeGaveUp("the reply was larger than allowed")
        return chunk


class Writer:
    """Writes to the worker's stdin in a thread of its own, so a send can give up at a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self.lock = threading.Condition()
        self.pending: list[tuple[bytes, list]] = []
        self.closed = False
        self.broken: Exception | None = None  # why the pipe broke: every later send fails at once
        threading.Thread(target=self._run, name="mha-worker-writer", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self.lock:
                while not self.pending and not self.closed:
                    self.lock.wait()
                if not self.pending:
                    return
                data, outcome = self.pending[0]
            error = None
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view[:1 << 16]):]
            except OSError as broken:
                error = broken
            with self.lock:
                self.pending.pop(0)
                outcome.append(error)
                if error is not None:
                    self.broken = error
                    for _, waiting in self.pending:
                        waiting.append(error)
                    self.pending.clear()
                self.lock.notify_all()
            if error is not None:
                return

    def send(self, data: bytes, deadline: float) -> Exception | None:
        """None once ``data`` is written; the error if the pipe broke; PipeGaveUp at ``deadline``."""
        outcome: list = []
        with self.lock:
            if self.broken is not None or self.closed:
                return self.broken or BrokenPipeError("the worker's input is closed")
            self.pending.append((data, outcome))
            self.lock.notify_all()
            while not outcome:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise PipeGaveUp("the call did not finish in time", timed_out=True)
                self.lock.wait(remaining)
        return outcome[0]

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.lock.notify_all()
