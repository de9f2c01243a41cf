"""What the warm check's processes write in their runtime folder (``check-*.log``), read by the tests of both the
Linux server and the standbys."""

import re
import time
from pathlib import Path


def log(runtime: Path) -> str:
    """Every log of ``runtime``, in order."""
    return "".join(path.read_text() for path in sorted(runtime.glob("check-*.log")))


def served(runtime: Path) -> int:
    """How many checks the processes of ``runtime`` have answered."""
    return len(re.findall(r"^check \d+:", log(runtime), re.M))


def running(runtime: Path, module: str) -> list[int]:
    """The pids that said they listen in ``runtime`` and still run ``module`` (a pid taken again is not one)."""
    return [int(pid) for pid in re.findall(r"^pid (\d+) listening", log(runtime), re.M) if _runs(int(pid), module)]


def wait_listening(runtime: Path, count: int, timeout: float, what: str) -> None:
    """Wait until ``count`` processes have said they listen in ``runtime``; fail, saying ``what``, after ``timeout``."""
    deadline = time.monotonic() + timeout
    while log(runtime).count(" listening on ") < count:
        assert time.monotonic() < deadline, f"{what}: {log(runtime)!r}"
        time.sleep(0.1)


def _runs(pid: int, module: str) -> bool:
    try:
        return module.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
