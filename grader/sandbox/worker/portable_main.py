"""The portable worker: one fresh interpreter per worker, talking over its own stdin and stdout.

Where the Linux layers are missing (Windows, macOS, Linux without the fork
server's pieces), ``grader.sandbox.portable`` starts this file as
``python -I -S portable_main.py --numpy-dir DIR [--package NAME]...`` in the
worker's scratch folder, with a scrubbed environment, stdin and stdout as
pipes and stderr as the output file. Standard library and NumPy only, on
every platform: POSIX-only modules are imported only where they exist.

Before any student code exists here, it moves the protocol off descriptors
0 and 1 (the student's ``print`` goes to the output file, ``input()`` reads
nothing), sets the resource limits this platform has (``resource`` on POSIX:
address space, CPU, file size, open files, no core files), imports NumPy,
narrows ``sys.path`` to the standard library (NumPy and the named packages
only by their own folders, as on Linux), and says ``hello`` with what is in
force. Then it answers requests exactly as the Linux worker does
(``worker_main.serve``): same codec, same replies, never pickle.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _siblings():
    """``forkserver._load``: this folder's modules as the package ``mha_worker`` (the grader is not importable)."""
    sys.path.insert(0, str(HERE))
    try:
        from forkserver import _load
    finally:
        sys.path.remove(str(HERE))
    return _load


def move_protocol_off_stdio() -> tuple[int, int]:
    """The protocol's descriptors, away from 0 and 1; 0 reads nothing, 1 and 2 are the output file."""
    to_worker, from_worker = os.dup(0), os.dup(1)
    if sys.platform == "win32":  # pipes in text mode would turn \n into \r\n inside the arrays' bytes
        import msvcrt

        for fd in (to_worker, from_worker):
            msvcrt.setmode(fd, os.O_BINARY)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
    return to_worker, from_worker


def apply_limits(limits: dict) -> tuple[list[str], list[str]]:
    """The rlimits this platform enforces (soft = hard); returns (in force, missing with why)."""
    try:
        import resource
    except ImportError:  # Windows: the trusted side bounds memory (a watchdog over the process tree)
        return [], ["no rlimits on this platform"]
    wanted = (("memory", "RLIMIT_AS", limits["memory_mb"] << 20), ("cpu", "RLIMIT_CPU", limits["cpu_seconds"]),
              ("file size", "RLIMIT_FSIZE", limits["file_size_mb"] << 20),
              ("open files", "RLIMIT_NOFILE", limits["open_files"]), ("core files", "RLIMIT_CORE", 0))
    applied, missing = [], []
    for name, kind, value in wanted:
        try:
            current = resource.getrlimit(getattr(resource, kind))[1]
            value = value if current == resource.RLIM_INFINITY else min(value, current)
            resource.setrlimit(getattr(resource, kind), (value, value))
            applied.append(name)
        except (AttributeError, ValueError, OSError) as refused:  # macOS refuses some (RLIMIT_AS)
            missing.append(f"no {name} rlimit ({refused})")
    import signal

    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long output fails a write, not the worker
    return applied, missing


def import_numpy(numpy_dir: str, packages: list[str], load):
    """NumPy from its own folder, then ``sys.path`` back to what ``-I -S`` gave (the standard library)."""
    site = os.path.dirname(numpy_dir)
    sys.path.append(site)
    import numpy

    sys.path.remove(site)
    load("worker_main").warm_up(numpy)
    found = [(name, os.path.join(site, name)) for name in packages
             if name.isidentifier() and os.path.isfile(os.path.join(site, name, "__init__.py"))]
    if found:
        sys.meta_path.append(load("confinement").PackageFinder(found))
    return numpy


def main(argv: list[str]) -> None:
    marks = [("interpreter", time.monotonic())]
    arguments = {"--numpy-dir": "", "--package": [], "--limits": ""}
    for flag, value in zip(argv[::2], argv[1::2]):
        if isinstance(arguments.get(flag), list):
            arguments[flag].append(value)
        else:
            arguments[flag] = value
    to_worker, from_worker = move_protocol_off_stdio()
    load = _siblings()
    protocol, worker_main = load("protocol"), load("worker_main")
    try:
        import json

        limits = json.loads(arguments["--limits"])
        applied, missing = apply_limits(limits)
        marks.append(("rlimits", time.monotonic()))
        numpy = import_numpy(arguments["--numpy-dir"], arguments["--package"], load)
        marks.append(("numpy", time.monotonic()))
        sys.argv[:] = ["worker"]
        getuid = getattr(os, "getuid", None)
        getsid = getattr(os, "getsid", None)
        hello = {"op": "hello", "ok": True, "portable": True, "platform": sys.platform, "rlimits": applied,
                 "missing": missing, "uid": getuid() if getuid else None,
                 "session": bool(getsid and getsid(0) == os.getpid()), "cwd": os.getcwd(),
                 "phases": [[name, at] for name, at in marks]}
    except BaseException as failed:  # noqa: BLE001 - refuse to run student code half-prepared
        protocol.write_message(os.fdopen(from_worker, "wb"), {"op": "hello", "ok": False,
                                                              "error": f"{type(failed).__name__}: {failed}"})
        os._exit(70)
    worker_main.serve(to_worker, from_worker, numpy, hello=hello)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
