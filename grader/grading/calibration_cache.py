"""The reference's timings kept per machine and interpreter, so that ``mha check`` need not time it each run.

Timing the reference through a worker costs a student's check about 0.4 s,
every run, for a figure that changes only with the machine, the interpreter,
NumPy, the grader or the exercise. ``mha check`` and the notebook's
``check(...)`` keep it between runs in the user's cache folder
(``grader.files.read_cached``: ``platformdirs.user_cache_dir("mha-lab")``, or
``MHA_CACHE_DIR``), one entry per exercise and key. The key holds what changes
the figure: the Python (version and executable), NumPy's version, the
grader's version, the hashes of the reference solution and of the exercise's
case files, and the machine (host, architecture, CPU model, cores). An entry
is measured again when any of those changed, when it is older than
``MAX_AGE``, or after a check ran into a call limit under it (``forget``: the
machine may be slower than when it was measured). What is kept is the raw
timings, so ``--timeout-scale`` still applies to them as to a fresh
measurement.

``mha grade`` never reads it: a class's run measures its own once (under that
run's load) and hands it to its grading processes. A cache that cannot be read
or written is no error: the reference is timed afresh, as without a cache.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from grader.files import forget_cached, read_cached, write_cached

MAX_AGE = 7 * 24 * 3600.0  # seconds an entry is trusted; then the reference is timed again
Timings = tuple[dict[str, list[list[float]]], float]  # calibration.from_times's arguments


def cache_key(*, assignment: str, files: tuple[Path, ...]) -> dict:
    """What the reference's timings depend on: interpreter, libraries, the files that make the calls, machine."""
    import numpy

    from grader import __version__

    return {
        "assignment": assignment, "python": sys.version, "executable": sys.executable,
        "numpy": numpy.__version__, "grader": __version__,
        "files": {path.name: _digest(path) for path in files},
        "machine": {"host": os.uname().nodename, "arch": os.uname().machine, "cpu": _cpu_model(),
                    "cores": os.cpu_count()},
    }


def read(key: dict) -> Timings | None:
    """The timings kept under ``key``, or None when there are none, they are stale or unreadable."""
    value = read_cached(_name(key), key, max_age=MAX_AGE)
    try:
        times = {str(function): [[float(seconds) for seconds in rounds] for rounds in calls]
                 for function, calls in value["times"].items()}
        return times, float(value["load_seconds"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def write(key: dict, timings: Timings) -> None:
    times, load_seconds = timings
    write_cached(_name(key), key, {"times": times, "load_seconds": load_seconds})


def forget(key: dict) -> None:
    """Drop the entry under ``key``: the next check times the reference again."""
    forget_cached(_name(key), key)


def _name(key: dict) -> str:
    return f"calibration-{key['assignment']}"


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith(("model name", "Processor", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""  # no /proc here: the architecture and the host stand for the machine
