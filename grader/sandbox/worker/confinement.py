"""Operating-system pieces of the worker's confinement (Linux), standard library only.

The fork server loads this module without the grader package. It decides what
a worker may read (``read_policy``), puts a freshly forked process in its own
namespaces, sets resource limits, drops to ``nobody``, and, as a child
subreaper, kills whatever a worker left behind (``kill_descendants``). The
read-only tree a worker sees as root is ``layout``'s; its memory and process
limits per tree are ``cgroups``'.
"""

from __future__ import annotations

import ctypes
import glob
import os
import signal
import site as site_packages
import stat
import sys
import sysconfig
import time
from dataclasses import dataclass

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
# Each worker gets its own: pid (it is init: everything it starts dies with it), network (no interface but a
# down loopback; its own abstract sockets), IPC (System V objects and POSIX queues of its own, destroyed with
# it), UTS (its own host name) and mount namespace (its own scratch tmpfs over the shared read-only tree).
NAMESPACES = (("pid", CLONE_NEWPID), ("net", CLONE_NEWNET), ("ipc", CLONE_NEWIPC), ("uts", CLONE_NEWUTS),
              ("mount", CLONE_NEWNS))
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
NOBODY = 65534
SYSTEM_LIBRARIES = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo",
                "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
PACKAGE_FOLDERS = ("*-packages", "python*/*-packages")  # below a granted folder: site-packages, dist-packages


@dataclass(frozen=True)
class ReadPolicy:
    """What a worker may read.

    ``binds`` are the granted folders and files, whole; ``masks`` the folders
    inside them that hold other installed packages or are hidden; ``readable``
    is the same grant with the masks carved out (for Landlock where no mount
    namespace can hide them); ``sys_path`` is for the worker's imports.
    """

    readable: tuple[str, ...]
    sys_path: tuple[str, ...]
    hidden: tuple[str, ...]  # folders no worker may see (the project, the course key, the output folder)
    packages: tuple[tuple[str, str], ...] = ()  # (name, folder) of third-party packages besides NumPy
    binds: tuple[str, ...] = ()
    masks: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()  # granted system folders that are symbolic links (/lib -> usr/lib)


def read_policy(numpy_dir: str, hidden=(), packages=()) -> ReadPolicy:
    """The interpreter's standard library and shared libraries, NumPy and the named ``packages``: nothing else.

    Wherever they are (a virtual environment, a conda environment, a home
    folder, ``/opt``, ``/tmp``): the folders are the interpreter's own, found
    from ``sysconfig`` and NumPy's ``__file__``. Folders that hold other
    installed packages (the environment's and the base interpreter's
    ``site-packages``, the system's ``dist-packages``, where the grader or an
    editable-install finder may sit) and ``hidden`` folders are excluded from
    every granted folder. A package is granted as its own folder (and its
    ``<name>.libs`` folder of bundled libraries) beside NumPy's.
    """
    paths = sysconfig.get_paths()
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    library_dir = sysconfig.get_config_var("LIBDIR") or ""
    roots = [paths["stdlib"], paths["platstdlib"], *SYSTEM_LIBRARIES, library_dir]
    roots = [root for root in dict.fromkeys(os.path.realpath(root) for root in roots if root) if os.path.isdir(root)]
    numpy_dir = os.path.realpath(numpy_dir)
    sites = {paths["purelib"], paths["platlib"], base["purelib"], base["platlib"], os.path.dirname(numpy_dir),
             *site_packages.getsitepackages()}
    for root in roots:
        for pattern in PACKAGE_FOLDERS:
            sites.update(glob.glob(os.path.join(glob.escape(root), pattern)))
    excluded = {os.path.realpath(path) for path in (*sites, *hidden)}
    readable: list[str] = []
    for root in roots:
        readable += _carve(root, excluded)
    site = os.path.dirname(numpy_dir)
    found = tuple((name, os.path.join(site, name)) for name in packages
                  if name.isidentifier() and os.path.isfile(os.path.join(site, name, "__init__.py")))
    own = []
    for folder in (numpy_dir, *(folder for _, folder in found)):
        own += [folder, folder + ".libs"]
    own = [path for path in own if os.path.exists(path)]
    files = [path for path in SYSTEM_FILES if os.path.exists(path)]
    masks = sorted(path for path in excluded
                   if os.path.isdir(path) and any(_within(path, root) and path != root for root in roots))
    stdlib = os.path.realpath(paths["stdlib"])
    sys_path = (stdlib, os.path.join(stdlib, "lib-dynload"))
    links = tuple((path, os.readlink(path)) for path in SYSTEM_LIBRARIES if os.path.islink(path))
    return ReadPolicy(tuple(dict.fromkeys(readable + own + files)), sys_path,
                      tuple(os.path.realpath(path) for path in hidden), found,
                      binds=tuple(dict.fromkeys(roots + own + files)), masks=tuple(masks), links=links)


class PackageFinder:
    """Imports the granted packages by their own folder: the site-packages folder itself stays unreadable."""

    def __init__(self, packages):
        self.packages = dict(packages)

    def find_spec(self, name, path=None, target=None):
        import importlib.util

        folder = self.packages.get(name)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])


def _carve(root: str, excluded: set[str]) -> list[str]:
    """``root``, or, if it holds an excluded folder, its entries minus that folder (recursively)."""
    if not os.path.exists(root) or root in excluded:
        return []
    inside = [path for path in excluded if path.startswith(root.rstrip("/") + "/")]
    if not inside:
        return [root]
    carved: list[str] = []
    for name in sorted(os.listdir(root)):
        carved += _carve(os.path.join(root, name), excluded)
    return carved


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


# ---- namespaces (root only) ---------------------------------------------------------
def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _checked(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def enter_namespaces(names=None) -> list[str]:
    """Unshare the namespaces of ``NAMESPACES`` (``names``: only those), each where allowed; return those entered.

    The pid namespace applies to the next child: it becomes that namespace's
    init, and when it ends the kernel kills every process inside. The IPC
    namespace dies with its last process, and every System V object and POSIX
    message queue in it with it.
    """
    wanted = [(name, flag) for name, flag in NAMESPACES if names is None or name in names]
    libc = _libc()
    if libc.unshare(sum(flag for _, flag in wanted)) == 0:
        return [name for name, _ in wanted]
    return [name for name, flag in wanted if libc.unshare(flag) == 0]


def unshare_mounts() -> bool:
    """A mount namespace of this process's own (the fork server's, for the read-only tree)."""
    return _libc().unshare(CLONE_NEWNS) == 0


def blocked_folders(paths, uid: int) -> dict[str, list[str]]:
    """Map each folder ``uid`` cannot enter to the paths below it that it would need (without a mount namespace)."""
    blocked: dict[str, list[str]] = {}
    for path in paths:
        parts = path.split("/")
        for depth in range(2, len(parts)):
            folder = "/".join(parts[:depth])
            info = os.stat(folder)
            if not (info.st_mode & stat.S_IXOTH) and not (info.st_uid == uid and info.st_mode & stat.S_IXUSR):
                blocked.setdefault(folder, []).append(path)
                break
    return blocked


# ---- limits, identity, process lifetime -------------------------------------------------
def apply_limits(limits: dict) -> None:
    """Resource limits of one worker (soft = hard, so student code cannot raise them)."""
    import resource  # POSIX only: imported where used, so ``read_policy`` and ``NOBODY`` load on every platform

    for kind, value in ((resource.RLIMIT_AS, limits["memory_mb"] << 20),
                        (resource.RLIMIT_CPU, limits["cpu_seconds"]),
                        (resource.RLIMIT_NPROC, limits["max_processes"]),
                        (resource.RLIMIT_FSIZE, limits["file_size_mb"] << 20),
                        (resource.RLIMIT_NOFILE, limits["open_files"]),
                        (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(kind, (value, value))


def drop_privileges(uid: int = NOBODY) -> None:
    """Become ``uid`` for good (real, effective and saved ids; no supplementary groups)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid):
        raise OSError(f"could not become uid {uid}")


def set_parent_death_signal(number: int | None = None) -> None:
    number = signal.SIGKILL if number is None else number  # no SIGKILL on Windows: read at call time
    _checked(_libc().prctl(PR_SET_PDEATHSIG, number, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def become_subreaper() -> None:
    """Orphaned descendants (double-forked daemons included) are re-parented to this process."""
    _checked(_libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")


def kill_descendants(timeout: float = 5.0) -> bool:
    """Kill and reap every child of this subreaper until none is left; False if some outlived ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid:
            continue
        for child in _children():
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


def _children() -> list[int]:
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as listing:
            return [int(pid) for pid in listing.read().split()]
    except OSError:  # kernels without CONFIG_PROC_CHILDREN: scan every process's parent
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as line:
                        fields = line.read().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                if int(fields[1]) == me:
                    found.append(int(name))
        return found
