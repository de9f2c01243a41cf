"""Files the grader writes: atomic replacement, and a safe file name for any student id.

``atomic_writer`` writes through a temporary file in the same folder and
renames it into place, so a reader (or a grader killed mid-write) sees the old
file or the whole new one, never a part. ``file_key`` turns a student id into
a file name that is safe on any file system and distinct for distinct ids.
Files are readable by the owner's group (``OUTPUT_MODE``, 0640, less what the
umask removes), so a TA in the course's group can open the outputs, and by
nobody else: grades are private. Foundation module: imports nothing from ``grader``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
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
