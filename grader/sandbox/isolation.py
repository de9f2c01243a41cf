"""What confined a worker, in one line: made from the worker's own ``hello``, with a warning for each layer
this machine lacks (raised once per process as a ``SandboxWarning``)."""

from __future__ import annotations

import contextlib
import warnings

from grader.sandbox.worker.confinement import NOBODY

NAMESPACES = ("pid", "net", "ipc", "uts", "mount")


class SandboxWarning(UserWarning):
    """Part of the confinement is missing on this machine."""


_WARNED: set[str] = set()


def describe_isolation(hello: dict) -> str:
    """One line saying what confined the worker, from its own report; warns once about what is missing."""
    if hello.get("portable"):  # the portable worker's own line: it is not the Linux sandbox
        from grader.sandbox.portable import describe_portable

        return describe_portable(hello)
    parts = [str(hello.get("landlock", "no landlock"))[:80]]
    namespaces = [str(name) for name in hello.get("namespaces", ()) if str(name) in NAMESPACES]
    if namespaces:
        parts.append(f"{'/'.join(namespaces)} namespaces")
    grants = hello.get("grants") if isinstance(hello.get("grants"), dict) else {}
    where = ", ".join(f"{str(name)[:20]} from {str(folder)[:120]}" for name, folder in list(grants.items())[:4])
    if hello.get("tree"):
        parts.append(f"read-only tree of its own ({where})" if where else "read-only tree of its own")
    elif where:
        parts.append(f"reads {where}")
    if hello.get("cgroup"):
        parts.append(str(hello["cgroup"])[:80])
    if hello.get("memory_watched"):
        parts.append("memory watchdog over the worker's processes")
    parts.append("rlimits (cpu, memory, processes, file size, open files)")
    if hello.get("session"):
        parts.append("new session")
    uid = hello.get("uid")
    parts.append("uid nobody" if uid == NOBODY else f"a uid of its own ({uid})" if hello.get("own_uid") else f"uid {uid}")
    scratch = str(hello.get("scratch", "folder"))[:60]
    parts.append(f"scratch {scratch}, scrubbed environment")
    missing = []
    if not str(hello.get("landlock", "")).startswith("landlock"):
        missing.append("Landlock is not available in this kernel: the worker can read any file its user can read"
                       + ("" if "net" in namespaces else " and reach the network"))
    elif "net" not in str(hello.get("landlock")) and "net" not in namespaces:
        missing.append("this kernel's Landlock cannot deny TCP and no network namespace is in force")
    if uid == 0:
        missing.append("the worker runs as root: process limits do not bind it")
    if hello.get("memory_watched") or ("cgroup" in hello and not hello.get("cgroup")):
        reason = str(hello.get("cgroup_missing") or "none could be made")[:200]
        missing.append(f"no cgroup per worker ({reason}): the keeper sums the memory of the worker's processes "
                       "every 50 ms, and processes are counted per user")
    elif "cpu_share" in hello and not hello.get("cpu_share"):
        reason = str(hello.get("cgroup_missing") or "no cpu controller")[:200]
        missing.append(f"no CPU share per worker ({reason}): each of a worker's processes competes for the CPU "
                       "on its own, and one that starts many slows the others")
    if hello.get("workers_apart") is False:
        missing.append("no pid namespace, no Landlock signal scoping and no uid of its own: workers graded at "
                       "once could signal each other, so they are graded one at a time")
    if "ipc" not in namespaces:
        missing.append("no IPC namespace: workers graded at once share System V IPC and POSIX message queues")
    if not hello.get("tree") and "unix" not in str(hello.get("landlock")):
        missing.append("no read-only tree of its own: the worker can connect to UNIX sockets of the host "
                       "(this kernel's Landlock cannot deny them)")
    missing += [str(text)[:200] for text in hello.get("warnings", ())[:5]]
    for text in missing:
        if text not in _WARNED:
            _WARNED.add(text)
            warnings.warn(text, SandboxWarning, stacklevel=3)
    return ", ".join(parts) + "".join(f"; WARNING: {text}" for text in missing)


@contextlib.contextmanager
def quiet_sandbox():
    """No ``SandboxWarning`` inside: what confined the code stays in the result's ``isolation`` (``--json``,
    ``--verbose``); a student checking their own code on their own machine is not grading a class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        yield
