"""Files the grader writes: atomic replacement, and a safe file name for any student id.

``atomic_writer`` writes through a temporary file in the same folder and
renames it into place, so a reader (or a grader killed mid-write) sees the old
file or the whole new one, never a part. ``file_key`` turns a student id into
a file name that is safe on any file system and distinct for distinct ids.
Files are readable by the owner's group (``OUTPUT_MODE``, 0640, less what the
umask removes), so a TA in the course's group can open the outputs, and by
nobody else: grades are private. ``read_cached``/``write_cached`` keep small
JSON entries between runs in the user's cache folder
(``platformdirs.user_cache_dir("mha-lab")``, or ``MHA_CACHE_DIR``), each under
the key of what it was computed from. Foundation module: imports nothing from ``grader``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
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

    Distinct ids always get distinct keys: a safe id is its own key, and
    every other key holds ``+``, which no safe id does.
    """
    cleaned = _UNSAFE.sub("_", student).lstrip(".") or "_"
    if cleaned == student and len(student) <= 120:
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
