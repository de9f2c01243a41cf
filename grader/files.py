"""Files the grader writes (atomic replacement, a safe file name for any id) and reads (what discovery found).

``atomic_writer`` writes through a temporary file in the same folder and
renames it into place, so a reader (or a grader killed mid-write) sees the old
file or the whole new one, never a part. ``file_key`` turns a student id into
a file name that is safe on any file system and distinct for distinct ids.
Files are readable by the owner's group (``OUTPUT_MODE``, 0640, less what the
umask removes), so a TA in the course's group can open the outputs, and by
nobody else: grades are private. ``read_cached``/``write_cached`` keep small
JSON entries between runs in the user's cache folder
(``platformdirs.user_cache_dir("mha-lab")``, or ``MHA_CACHE_DIR``), each under
the key of what it was computed from.

Reading, ``read_found``: discovery records each file's place (its path
components below SUBMISSIONS) and identity (device and inode); a grading lane
opens SUBMISSIONS, then every component below it with ``O_NOFOLLOW`` relative
to the one before (``openat``), the file itself with ``O_NONBLOCK`` (a FIFO or
a device never stalls the lane), and the descriptor's ``fstat`` must show a
regular file with the identity discovery saw (whose hard links discovery
judged: ``grader.entries.entry.LinkCensus``). A folder renamed after
discovery and replaced by a link (to solutions/, to a classmate's folder) is
refused, never graded as the student. At most ``limit`` bytes are read, so a
512 MiB sparse file costs nothing; ``read_capped`` is the same read for a path
given alone. An error is a message key and its parameters (``EntryError``).

Foundation module: imports nothing from ``grader``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

_UNSAFE = re.compile(r"[^\w.-]", re.UNICODE)
# The key of an id that is not used as it is carries this mark, a character no
# id used as it is can hold, so it never equals another id's key
# ("mary@uni.edu" and a student literally named "mary_uni.edu-939f9027").
HASHED_MARK = "+"
OUTPUT_MODE = 0o640  # owner reads and writes, the group reads; the umask may remove more


def output_mode() -> int:
    """``OUTPUT_MODE`` less the process's umask (read without changing it where /proc tells it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return OUTPUT_MODE & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)  # elsewhere: read it by setting it, then put it back at once
    os.umask(mask)
    return OUTPUT_MODE & ~mask


def file_key(student: str) -> str:
    """A file name for ``student``: the id itself when safe, else a cleaned id, ``+`` and a hash.

    Distinct ids always get distinct keys, also on a file system that ignores
    case (macOS, Windows): a safe id in lower case is its own key, and every
    other key holds ``+``, which no such id does, and a hash of the exact id
    (``Mary`` and ``mary`` get ``Mary+<hash>`` and ``mary``).
    """
    cleaned = _UNSAFE.sub("_", student).lstrip(".") or "_"
    if cleaned == student and len(student) <= 120 and student == student.lower():
        return student
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{cleaned[:100]}{HASHED_MARK}{digest}"


@contextlib.contextmanager
def atomic_writer(path: Path, mode: str = "w", *, durable: bool = False) -> Iterator[IO]:
    """Write ``path`` through a temporary file in the same folder, then rename it into place.

    Readers see the old file or the whole new one, never a part. ``durable``
    also flushes the data to the disk before the rename (survives power loss).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.fchmod(descriptor, output_mode())  # mkstemp makes 0600
    encoding = None if "b" in mode else "utf-8"
    try:
        with open(descriptor, mode, encoding=encoding, newline="" if encoding else None) as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def atomic_write_text(path: Path, text: str, *, durable: bool = False) -> None:
    with atomic_writer(path, durable=durable) as handle:
        handle.write(text)


# ---- small entries kept between runs --------------------------------------------------------------
CACHE_DIR_VARIABLE = "MHA_CACHE_DIR"


def user_cache_dir() -> Path:
    """The folder for what the grader keeps between runs (created on first write, not here)."""
    override = os.environ.get(CACHE_DIR_VARIABLE)
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("mha-lab", appauthor=False))


def read_cached(name: str, key: dict, *, max_age: float | None = None) -> dict | None:
    """The value kept as ``name`` under ``key``; None when there is none, it is older than ``max_age``
    seconds or it cannot be read (a cache never fails a run)."""
    try:
        entry = json.loads(_cached_path(name, key).read_text(encoding="utf-8"))
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("value"), dict):
            return None
        age = time.time() - float(entry["written_at"])
        if max_age is not None and not 0 <= age <= max_age:
            return None
        return entry["value"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_cached(name: str, key: dict, value: dict) -> None:
    """Keep ``value`` as ``name`` under ``key`` (quietly nothing where the cache folder cannot be written)."""
    try:
        atomic_write_text(_cached_path(name, key), json.dumps({"key": key, "written_at": time.time(),
                                                               "value": value}, indent=1))
    except OSError:
        pass


def forget_cached(name: str, key: dict) -> None:
    with contextlib.suppress(OSError):
        _cached_path(name, key).unlink(missing_ok=True)


def _cached_path(name: str, key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    return user_cache_dir() / f"{name}-{digest}.json"


# ---- reading what discovery found -----------------------------------------------------------
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
        # the file discovery saw and judged (its hard links included): a name given to it since changes nothing
        return _read_descriptor(descriptor, info, name=name, limit=limit, links_judged=True)


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


def _read_descriptor(descriptor: int, info: os.stat_result, *, name: str, limit: int,
                     links_judged: bool = False) -> bytes:
    if not stat.S_ISREG(info.st_mode):
        raise EntryError("file_not_regular", name=name)
    if info.st_nlink > 1 and not links_judged:
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

