"""Read what discovery found, and only that: from a descriptor of SUBMISSIONS, no link followed, never blocking.

Discovery records each file's place (its path components below SUBMISSIONS)
and identity (device and inode). A grading lane reads it again with
``read_found``: SUBMISSIONS is opened once, then every component below it
with ``O_NOFOLLOW`` relative to the one before (``openat``), the file itself
with ``O_NONBLOCK`` (a FIFO or a device never stalls the lane), and the
descriptor's ``fstat`` must show a regular file with the identity discovery
saw. A folder renamed after discovery and replaced by a link (to solutions/,
to a classmate's folder) is refused, never graded as the student.

Sizes are capped before reading: at most ``limit`` bytes are read, so a
512 MiB sparse file costs nothing. ``read_capped`` is the same read for a
path given alone (``mha check``, an answers file, the candidates discovery
compares). Foundation module: imports nothing of the grader (an error is a
message key and its parameters), so every layer may read with it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path


MAX_SOURCE_BYTES = 2 << 20  # a submitted file: the same limit as grader.sandbox.source's (a test holds them equal)
MAX_ANSWERS_BYTES = 256 << 10  # a quiz answers file of a hundred questions is a few KiB

_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_ROOT_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
_FOLDER_FLAGS = _ROOT_FLAGS | getattr(os, "O_NOFOLLOW", 0)


class EntryError(Exception):
    """The entry cannot be read as discovered: ``key`` and ``params`` of the message saying why
    (``content/messages.toml``; this module imports nothing of the grader, so import chains stay short)."""

    def __init__(self, key: str, **params):
        self.key, self.params = key, params
        super().__init__(key)


@dataclass(frozen=True)
class Found:
    """Where discovery found a file below SUBMISSIONS, and which file it was."""

    root: Path  # SUBMISSIONS (or the folder of a file graded alone)
    parts: tuple[str, ...]  # the path's components below ``root``
    device: int
    inode: int

    @property
    def path(self) -> Path:
        return Path(self.root, *self.parts)


def found_at(root: Path, path: Path, info: os.stat_result) -> Found:
    """The record of ``path`` (inside ``root``), whose ``lstat`` was ``info``.

    ``root`` is the instructor's (it may be a link, to a mounted share): it is kept resolved, and only the
    components below it are the students'.
    """
    root, path = Path(root).absolute(), Path(path).absolute()
    return Found(root=root.resolve(), parts=path.relative_to(root).parts, device=info.st_dev, inode=info.st_ino)


def read_found(found: Found, *, limit: int) -> bytes:
    """The bytes of the file ``found`` names, read as described above; EntryError says why not."""
    name = found.parts[-1] if found.parts else found.root.name
    with contextlib.ExitStack() as stack:
        try:
            folder = os.open(found.root, _ROOT_FLAGS)
        except OSError:
            raise EntryError("file_missing", name=name) from None
        stack.callback(os.close, folder)
        for part in found.parts[:-1]:
            try:
                inner = os.open(part, _FOLDER_FLAGS, dir_fd=folder)
            except OSError:
                raise EntryError("entry_changed", name=name) from None
            stack.callback(os.close, inner)
            folder = inner
        try:
            descriptor = os.open(found.parts[-1], _FILE_FLAGS, dir_fd=folder)
        except OSError:
            raise EntryError("entry_changed", name=name) from None
        stack.callback(os.close, descriptor)
        info = os.fstat(descriptor)
        if (info.st_dev, info.st_ino) != (found.device, found.inode):
            raise EntryError("entry_changed", name=name)
        return _read_descriptor(descriptor, info, name=name, limit=limit)


def read_capped(path: Path, *, limit: int) -> bytes:
    """The bytes of the regular file at ``path``, its last component not followed if a link, never blocking."""
    path = Path(path)
    try:
        descriptor = os.open(path, _FILE_FLAGS)
    except OSError:
        key = "file_symlink" if path.is_symlink() else "file_missing"
        raise EntryError(key, name=path.name) from None
    try:
        return _read_descriptor(descriptor, os.fstat(descriptor), name=path.name, limit=limit)
    finally:
        os.close(descriptor)


def _read_descriptor(descriptor: int, info: os.stat_result, *, name: str, limit: int) -> bytes:
    if not stat.S_ISREG(info.st_mode):
        raise EntryError("file_not_regular", name=name)
    if info.st_nlink > 1:
        raise EntryError("file_hard_link", name=name, links=info.st_nlink)
    if info.st_size > limit:
        raise EntryError("file_too_large", **size_params(name, info.st_size, limit))
    chunks, total = [], 0
    while total <= limit:  # the size may grow after fstat: never read more than the limit and one byte
        chunk = os.read(descriptor, min(1 << 20, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise EntryError("file_too_large", **size_params(name, total, limit))
    return b"".join(chunks)


def size_params(name: str, size: int, limit: int) -> dict:
    """The parameters of ``file_too_large``."""
    return {"name": name, "size": f"{size:,}", "limit": f"{limit:,}"}

