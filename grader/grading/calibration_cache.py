"""The reference's timings kept per machine and interpreter, so that ``mha check`` need not time it each run.

Timing the reference through a worker costs a student's check about 0.4 s,
every run, for a figure that changes only with the machine, the interpreter,
NumPy, the grader or the exercise. ``mha check`` and the notebook's
``check(...)`` keep it here between runs: one small JSON file per exercise and
key under ``platformdirs.user_cache_dir("mha-lab")`` (``MHA_CACHE_DIR`` names
another folder). The key holds what changes the figure: the Python (version
and executable), NumPy's version, the grader's version, the hashes of the
reference solution and of the exercise's case files, and the machine (host,
architecture, CPU model, cores). An entry is measured again when any of those
changed, when it is older than ``MAX_AGE``, or after a check ran into a call
limit under it (``forget``: the machine may be slower than when it was
measured). What is kept is the raw timings, so ``--timeout-scale`` still
applies to them as to a fresh measurement.

``mha grade`` never reads it: a class's run measures its own once (under that
run's load) and hands it to its grading processes. A cache that cannot be read
or written is no error: the reference is timed afresh, as without a cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from grader.files import atomic_write_text

CACHE_DIR_VARIABLE = "MHA_CACHE_DIR"
SCHEMA_VERSION = 1
MAX_AGE = 7 * 24 * 3600.0  # seconds an entry is trusted; then the reference is timed again
Timings = tuple[dict[str, list[list[float]]], float]  # calibration.from_times's arguments


def cache_dir() -> Path:
    override = os.environ.get(CACHE_DIR_VARIABLE)
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("mha-lab", appauthor=False))


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


def read(key: dict, *, now: float | None = None) -> Timings | None:
    """The timings kept under ``key``, or None when there are none, they are stale or unreadable."""
    try:
        entry = json.loads(_path(key).read_text(encoding="utf-8"))
        if entry.get("schema_version") != SCHEMA_VERSION or entry.get("key") != key:
            return None
        age = (time.time() if now is None else now) - float(entry["measured_at"])
        if not 0 <= age <= MAX_AGE:
            return None
        times = {str(function): [[float(seconds) for seconds in rounds] for rounds in calls]
                 for function, calls in entry["times"].items()}
        return times, float(entry["load_seconds"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write(key: dict, timings: Timings) -> None:
    """Keep ``timings`` under ``key`` (quietly nothing where the cache folder cannot be written)."""
    times, load_seconds = timings
    entry = {"schema_version": SCHEMA_VERSION, "key": key, "measured_at": time.time(),
             "times": times, "load_seconds": load_seconds}
    try:
        path = _path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(entry, indent=1))
    except OSError:
        pass


def forget(key: dict) -> None:
    """Drop the entry under ``key``: the next check times the reference again."""
    try:
        _path(key).unlink(missing_ok=True)
    except OSError:
        pass


def _path(key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    return cache_dir() / f"calibration-{key['assignment']}-{digest}.json"


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
