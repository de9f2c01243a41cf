"""A worker's process tree on every platform: found, measured and ended (the portable worker's).

On POSIX the worker leads a session of its own, so ``killpg`` ends what it
left behind in it, orphans included; psutil finds each descendant everywhere
(what ``taskkill /T`` does on Windows, which it stands in for where psutil is
missing); orphans that no process group holds (any on Windows; on macOS and
Linux one that left the session with ``setsid``) are found by the token their
environment inherited. On Windows a Job Object (``grader.sandbox.windows_job``)
holds the tree when it can be made.
"""

from __future__ import annotations

import os
import signal
import subprocess

TOKEN_VARIABLE = "MHA_WORKER_TOKEN"


def _psutil():
    try:
        import psutil
    except ImportError:
        return None
    return psutil if hasattr(psutil, "Process") else None  # a build that does not fit this platform


def end_tree(process: subprocess.Popen, *, token: str = "", since: float = 0.0) -> list:
    """Kill ``process`` and every process it started (a snapshot first, so none is orphaned out of sight);
    returns the descendants killed, for ``wait_gone``.

    An orphan (its parent gone) is no one's descendant, and one that started a session of its own is out of the
    worker's group too (the only way on Windows, which has no groups): it is found by the ``token`` its
    environment inherited, among the processes started after ``since``.
    """
    psutil, descendants = _psutil(), []
    grouped = hasattr(os, "killpg") and hasattr(os, "setsid")
    if psutil is not None:
        try:
            descendants = psutil.Process(process.pid).children(recursive=True)
        except psutil.Error:
            descendants = []
        if token:
            known = {child.pid for child in descendants} | {process.pid}
            descendants += [stray for stray in _carrying(psutil, token, since) if stray.pid not in known]
    if grouped:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the worker's own session: the leftovers of dead parents too
        except OSError:
            pass
    elif psutil is None and os.name == "nt" and process.poll() is None:
        subprocess.run(["taskkill", "/T", "/F", "/PID", str(process.pid)], capture_output=True, check=False)
    try:
        process.kill()
    except OSError:
        pass
    for child in descendants:
        try:
            child.kill()
        except psutil.Error:
            pass
    return descendants


def _carrying(psutil, token: str, since: float) -> list:
    """The processes started after ``since`` whose environment holds the worker's ``token``."""
    found = []
    for candidate in psutil.process_iter(["create_time"]):
        try:
            if (candidate.info["create_time"] or 0) >= since - 1 and \
                    candidate.environ().get(TOKEN_VARIABLE) == token:
                found.append(candidate)
        except psutil.Error:
            continue
    return found


def wait_gone(descendants: list, timeout: float) -> None:
    psutil = _psutil()
    if psutil is not None and descendants:
        psutil.wait_procs(descendants, timeout=timeout)


def tree_memory(pid: int, *, children: bool = True) -> int:
    """Resident bytes of the process ``pid`` (and of its descendants); 0 once it is gone."""
    psutil = _psutil()
    if psutil is None:
        return 0
    try:
        process = psutil.Process(pid)
        members = [process] + (process.children(recursive=True) if children else [])
    except psutil.Error:
        return 0
    used = 0
    for member in members:
        try:
            used += member.memory_info().rss
        except psutil.Error:
            pass
    return used
