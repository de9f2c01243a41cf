"""Memory and process limits for a worker's whole tree (Linux), standard library only.

Where root can make one, every worker gets a memory and a pids cgroup of its
own, made below the grader's own cgroup (as ``/proc/self/cgroup`` names it)
and removed after the worker: cgroup v1's ``memory`` and ``pids`` hierarchies,
or cgroup v2 where the grader's cgroup hands those controllers to its
children. The limits then hold for the worker and everything it starts
together (its scratch tmpfs included: its pages are charged to it). No cgroup
that the fork server did not make is ever written to.

Where none can be made (not root, a v2 cgroup that does not delegate the
controllers), the keeper runs a ``Watchdog`` instead: every 50 ms it sums the
memory of the worker's processes (their anonymous and shared resident pages,
the pages of every memory-backed file they hold open: memfd, tmpfs, ramfs,
each file once, since a file written and never mapped is resident in no
process; and, in the worker's own IPC namespace, its System V shared memory
segments, which outlive every mapping) and kills them all when the sum is over the limit;
``RLIMIT_NPROC`` stands in for the process count.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass

CONTROLLERS = ("memory", "pids", "cpu")
WORKER_PREFIX = "mha-worker-"  # then the fork server's pid and a token: mha-worker-<pid>-<hex>
STALE_AFTER = 10.0  # seconds: a worker's cgroup is joined within milliseconds of being made
CPU_PERIOD = 100_000  # microseconds: each worker may run for one such period per period (one core), no more
WATCH_INTERVAL = 0.05  # seconds between two looks of the watchdog


@dataclass(frozen=True)
class Hierarchy:
    """Where the cgroups of workers go for some controllers: below the grader's own cgroup in one hierarchy."""

    version: int  # 1 or 2
    folder: str  # the grader's cgroup, as a folder of the mounted hierarchy
    controllers: tuple[str, ...]


@dataclass(frozen=True)
class Setup:
    """The hierarchies found once by the fork server, and why a controller is missing if one is."""

    hierarchies: tuple[Hierarchy, ...] = ()
    missing: str = ""

    def provides(self, controller: str) -> bool:
        return any(controller in hierarchy.controllers for hierarchy in self.hierarchies)

    def describe(self) -> str:
        found = [f"v{hierarchy.version} {'+'.join(hierarchy.controllers)}" for hierarchy in self.hierarchies]
        return f"cgroup per worker ({', '.join(found)})" if found else "no cgroup"


def discover(proc: str = "/proc/self") -> Setup:
    """Which controllers a child cgroup of this process's own cgroup can have, and where (tried for real)."""
    try:
        with open(f"{proc}/cgroup") as listing:
            memberships = [line.rstrip("\n").split(":", 2) for line in listing if line.count(":") >= 2]
        with open(f"{proc}/mountinfo") as listing:
            mounts = [_mount_of(line) for line in listing]
    except OSError as failed:
        return Setup(missing=f"cgroups unreadable ({failed.strerror})")
    hierarchies, reasons = [], []
    for controller in CONTROLLERS:
        v1 = [(path, point) for _, names, path in memberships if controller in names.split(",")
              for point, kind, options in mounts if kind == "cgroup" and controller in options.split(",")]
        if v1:
            hierarchies.append(Hierarchy(1, _join(v1[0][1], v1[0][0]), (controller,)))
            continue
        v2 = [(path, point) for number, names, path in memberships if number == "0" and names == ""
              for point, kind, _ in mounts if kind == "cgroup2"]
        if not v2:
            reasons.append(f"no {controller} controller is mounted")
            continue
        folder = _join(v2[0][1], v2[0][0])
        delegated = _read(os.path.join(folder, "cgroup.subtree_control")).split()
        if controller in delegated:
            hierarchies.append(Hierarchy(2, folder, (controller,)))
        else:
            reasons.append(f"the grader's cgroup v2 {v2[0][0]} does not hand {controller} to its children "
                           "(cgroup.subtree_control)")
    merged: dict[tuple[int, str], list[str]] = {}
    for hierarchy in hierarchies:
        merged.setdefault((hierarchy.version, hierarchy.folder), []).extend(hierarchy.controllers)
    usable, missing = [], list(reasons)
    for (version, folder), controllers in merged.items():
        problem = _probe(folder)
        if problem:
            missing.append(f"cannot make a cgroup in {folder} ({problem})")
        else:
            usable.append(Hierarchy(version, folder, tuple(controllers)))
    return Setup(tuple(usable), "; ".join(missing))


def _mount_of(line: str) -> tuple[str, str, str]:
    """(mount point, file system type, super options) of one line of ``mountinfo``."""
    before, _, after = line.partition(" - ")
    fields, rest = before.split(), after.split()
    point = fields[4].replace("\\040", " ") if len(fields) > 4 else ""
    return point, rest[0] if rest else "", rest[2] if len(rest) > 2 else ""


def _join(mount_point: str, path: str) -> str:
    return os.path.normpath(mount_point + "/" + path.lstrip("/"))


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def _probe(folder: str) -> str:
    """Empty when a child cgroup can be made (and removed) in ``folder``, else why not."""
    probe = os.path.join(folder, f"mha-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as failed:
        return failed.strerror or str(failed)
    return ""


class WorkerCgroup:
    """The cgroups of one worker: made with its limits, joined by the worker itself, removed after it."""

    def __init__(self, setup: Setup, name: str):
        self.folders: list[tuple[Hierarchy, str]] = []
        try:
            for hierarchy in setup.hierarchies:
                folder = os.path.join(hierarchy.folder, name)
                os.mkdir(folder)
                self.folders.append((hierarchy, folder))
        except OSError:
            self.remove()
            raise

    def limit(self, limits: dict) -> None:
        """Set a request's ``memory_mb`` and ``max_processes``, and the worker's CPU share (before any student
        code runs)."""
        for hierarchy, folder in self.folders:
            _limit(hierarchy, folder, limits)

    def join(self) -> None:
        """Move the calling process (and so everything it will start) into every cgroup of this worker.

        The caller is a freshly forked, single-threaded process: in v1 it moves
        its one thread (``tasks``), which spares the kernel a wait for an RCU
        grace period (5-10 ms here) that moving a whole thread group costs.
        """
        for hierarchy, folder in self.folders:
            with open(os.path.join(folder, "tasks" if hierarchy.version == 1 else "cgroup.procs"), "w") as procs:
                procs.write("0")

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of this worker for going over the memory limit."""
        for hierarchy, folder in self.folders:
            if "memory" in hierarchy.controllers:
                name = "memory.events" if hierarchy.version == 2 else "memory.oom_control"
                events = _read(os.path.join(folder, name))
                for line in events.splitlines():
                    name, _, count = line.partition(" ")
                    if name == "oom_kill" and count.strip() not in ("", "0"):
                        return True
        return False

    def remove(self, timeout: float = 2.0) -> bool:
        """Remove the cgroups (the worker's processes are gone); False if one stayed busy past ``timeout``."""
        deadline = time.monotonic() + timeout
        left = []
        for _, folder in reversed(self.folders):
            while True:
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError as busy:
                    if busy.errno != errno.EBUSY or time.monotonic() > deadline:
                        left.append(folder)
                        break
                    time.sleep(0.002)
        self.folders = []
        return not left


def worker_name(server_pid: int, token: str) -> str:
    """The name of a worker's cgroups (and scratch folder): it says which fork server's keeper made them."""
    return f"{WORKER_PREFIX}{server_pid}-{token}"


def sweep(setup: Setup, own_pid: int) -> list[str]:
    """Remove the empty worker cgroups that fork servers no longer running left behind; the removed folders.

    A keeper removes its worker's cgroups, but not when it is killed with its
    server (a machine's processes ended at once, a SIGKILL of the group).
    Only folders named by ``worker_name`` after a server other than
    ``own_pid`` that is gone are taken, or, from a grader that named them
    without a pid, ones older than ``STALE_AFTER``; and ``rmdir`` itself
    refuses a cgroup that still holds a process.
    """
    removed = []
    now = time.time()
    for hierarchy in setup.hierarchies:
        try:
            entries = list(os.scandir(hierarchy.folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.startswith(WORKER_PREFIX) or not _is_stale(entry, own_pid, now):
                continue
            try:
                os.rmdir(entry.path)
            except OSError:  # busy (a process is in it) or gone already
                continue
            removed.append(entry.path)
    return removed


def _is_stale(entry: os.DirEntry, own_pid: int, now: float) -> bool:
    try:
        if not entry.is_dir(follow_symlinks=False) or now - entry.stat(follow_symlinks=False).st_mtime < STALE_AFTER:
            return False
    except OSError:
        return False
    server, _, _ = entry.name[len(WORKER_PREFIX):].partition("-")
    if not server.isdigit():
        return True  # named without its server's pid: made by an earlier version, and old
    if int(server) == own_pid:
        return False
    try:
        os.kill(int(server), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _limit(hierarchy: Hierarchy, folder: str, limits: dict) -> None:
    memory, processes = limits["memory_mb"] << 20, limits["max_processes"]
    settings = []
    if "memory" in hierarchy.controllers and hierarchy.version == 1:
        settings += [("memory.limit_in_bytes", memory), ("memory.memsw.limit_in_bytes", memory)]  # memsw: no swap
    elif "memory" in hierarchy.controllers:
        settings += [("memory.max", memory), ("memory.swap.max", 0), ("memory.oom.group", 1)]
    if "pids" in hierarchy.controllers:
        settings.append(("pids.max", processes))
    # The same weight as any other worker whatever number of processes or sessions it makes (128 setsid
    # children each got a share of their own without it), and at most one core.
    if "cpu" in hierarchy.controllers and hierarchy.version == 1:
        settings += [("cpu.shares", 1024), ("cpu.cfs_period_us", CPU_PERIOD), ("cpu.cfs_quota_us", CPU_PERIOD)]
    elif "cpu" in hierarchy.controllers:
        settings += [("cpu.weight", 100), ("cpu.max", f"{CPU_PERIOD} {CPU_PERIOD}")]
    for name, value in settings:
        path = os.path.join(folder, name)
        if name in ("memory.memsw.limit_in_bytes", "memory.swap.max", "memory.oom.group", "cpu.cfs_quota_us",
                    "cpu.cfs_period_us", "cpu.max") and not os.path.exists(path):
            continue  # a kernel without swap accounting, grouped OOM kills, or CPU bandwidth control
        with open(path, "w") as setting:
            setting.write(str(value))


class Watchdog:
    """The fallback for memory: the summed resident memory of this keeper's descendants, looked at on demand."""

    def __init__(self, memory_mb: int | None, scratch: str | None = None, scratch_mb: int | None = None,
                 own_ipc: bool = False):
        """``memory_mb`` None: memory has a cgroup; ``scratch`` None: the scratch folder is a bounded tmpfs;
        ``own_ipc``: the keeper is in the worker's own IPC namespace, so every System V shared memory
        segment it sees is the worker's (kept after every process detached, resident in none)."""
        self.own_ipc = own_ipc
        self.limit = memory_mb << 20 if memory_mb is not None else None
        self.scratch, self.scratch_limit = scratch, (scratch_mb or 0) << 20
        self.looks = 0
        self.memory_devices = memory_devices() if memory_mb is not None else frozenset()

    def over(self) -> str | None:
        """Why the worker's tree must be killed now, or None."""
        self.looks += 1
        if self.limit is not None:
            processes, files = _descendants(os.getpid()), {}
            used = sum(_resident(pid) for pid in processes)
            for pid in processes:
                files.update(_memory_files(pid, self.memory_devices))
            used += sum(files.values()) + (shared_segments() if self.own_ipc else 0)
            if used > self.limit:
                return f"its processes held {used >> 20} MiB together, over the {self.limit >> 20} MiB limit"
        if self.scratch and self.looks % 4 == 0:
            written = folder_size(self.scratch, self.scratch_limit)
            if written > self.scratch_limit:
                return f"it wrote more than {self.scratch_limit >> 20} MiB into its scratch folder"
        return None


def _descendants(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{task}/children") as listing:
                    children = [int(child) for child in listing.read().split()]
                found += children
                queue += children
        except (OSError, ValueError):
            continue
    return found


def _resident(pid: int) -> int:
    """Anonymous and shared-memory pages a process holds, in bytes (file pages are the libraries, shared)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(("RssAnon:", "RssShmem:")):
                    total += int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return total


MEMORY_FILE_SYSTEMS = ("tmpfs", "ramfs", "hugetlbfs", "devtmpfs")


def memory_devices(mountinfo: str = "/proc/self/mountinfo") -> frozenset[int]:
    """Device numbers of the mounted file systems whose files are memory (tmpfs and the like)."""
    found = set()
    try:
        with open(mountinfo) as listing:
            for line in listing:
                fields, _, after = line.partition(" - ")
                parts = fields.split()
                if len(parts) > 2 and after.split()[:1] and after.split()[0] in MEMORY_FILE_SYSTEMS:
                    major, _, minor = parts[2].partition(":")
                    found.add(os.makedev(int(major), int(minor)))
    except (OSError, ValueError):
        pass
    return frozenset(found)


def shared_segments(listing: str = "/proc/sysvipc/shm") -> int:
    """Resident bytes of the System V shared memory segments of this process's IPC namespace."""
    total = 0
    try:
        with open(listing) as lines:
            header = next(lines).split()
            column = header.index("rss")
            for line in lines:
                fields = line.split()
                if len(fields) > column:
                    total += int(fields[column])
    except (OSError, ValueError, StopIteration):
        pass
    return total


def _memory_files(pid: int, devices: frozenset[int]) -> dict[tuple[int, int], int]:
    """(device, inode) -> bytes of each memory-backed regular file ``pid`` holds open: a memfd (its name says
    so, its device is the kernel's own), or a file on a memory file system; written pages, not its length."""
    held = {}
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return held
    for name in names:
        path = f"{folder}/{name}"
        try:
            info = os.stat(path)  # the open file itself (the link in /proc leads to it, even unlinked)
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_dev not in devices and not os.readlink(path).startswith("/memfd:"):
                continue
        except OSError:
            continue
        held[(info.st_dev, info.st_ino)] = info.st_blocks * 512
    return held


def folder_size(folder: str, limit: int, most_entries: int = 20000) -> int:
    """Bytes used below ``folder``; more than ``limit`` as soon as that is certain (or past ``most_entries``)."""
    used, entries, stack = 0, 0, [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                for entry in listing:
                    entries += 1
                    info = entry.stat(follow_symlinks=False)
                    used += info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size  # Windows: no blocks
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    if used > limit or entries > most_entries:
                        return limit + 1
        except OSError:
            continue
    return used
