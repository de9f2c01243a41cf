"""Operating-system pieces of the worker's confinement (Linux), standard library only.

The fork server loads this module without the grader package. It decides what
a worker may read (``read_policy``), puts a freshly forked process in its own
namespaces, makes the interpreter reachable for an unprivileged user and hides
the project (``arrange_mounts``), sets resource limits, drops to ``nobody``,
and, as a child subreaper, kills whatever a worker left behind
(``kill_descendants``).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import site as site_packages
import stat
import sys
import sysconfig
import time
from dataclasses import dataclass

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x20000000, 0x40000000
NAMESPACES = (("pid", CLONE_NEWPID), ("net", CLONE_NEWNET), ("mount", CLONE_NEWNS))
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
NOBODY = 65534
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
SYSTEM_LIBRARIES = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo",
                "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


@dataclass(frozen=True)
class ReadPolicy:
    """What a worker may read: ``readable`` paths; ``sys_path`` for its imports."""

    readable: tuple[str, ...]
    sys_path: tuple[str, ...]
    hidden: tuple[str, ...]  # folders masked in the worker's mount namespace
    packages: tuple[tuple[str, str], ...] = ()  # (name, folder) of third-party packages besides NumPy


def read_policy(numpy_dir: str, hidden=(), packages=()) -> ReadPolicy:
    """The interpreter's standard library and shared libraries, NumPy and the named ``packages``: nothing else.

    Folders that hold other installed packages (``site-packages``, where the
    grader or an editable-install finder may sit) and ``hidden`` folders
    (the project, the course key) are carved out of every granted folder.
    A package is granted as its own folder (and its ``<name>.libs`` folder of
    bundled libraries) beside NumPy's.
    """
    paths = sysconfig.get_paths()
    # In a virtual environment the base interpreter's site-packages sit inside
    # the granted standard library folder: carve them out too, and the folder
    # NumPy itself was found in (NumPy is granted on its own below).
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    sites = (paths["purelib"], paths["platlib"], base["purelib"], base["platlib"], os.path.dirname(numpy_dir),
             *site_packages.getsitepackages())
    excluded = {os.path.realpath(path) for path in (*sites, *hidden)}
    roots = [paths["stdlib"], paths["platstdlib"], *SYSTEM_LIBRARIES]
    library_dir = sysconfig.get_config_var("LIBDIR") or ""
    library = sysconfig.get_config_var("LDLIBRARY") or ""
    if library_dir and library and os.path.isdir(library_dir):
        roots += [os.path.join(library_dir, name) for name in os.listdir(library_dir) if name.startswith(library)]
    readable: list[str] = []
    for root in dict.fromkeys(os.path.realpath(root) for root in roots):
        readable += _carve(root, excluded)
    numpy_dir = os.path.realpath(numpy_dir)
    site = os.path.dirname(numpy_dir)
    found = tuple((name, os.path.join(site, name)) for name in packages
                  if name.isidentifier() and os.path.isfile(os.path.join(site, name, "__init__.py")))
    for folder in (numpy_dir, *(folder for _, folder in found)):
        readable += [folder, folder + ".libs"]
    readable += SYSTEM_FILES
    stdlib = os.path.realpath(paths["stdlib"])
    sys_path = (stdlib, os.path.join(stdlib, "lib-dynload"))
    return ReadPolicy(tuple(path for path in dict.fromkeys(readable) if os.path.exists(path)), sys_path,
                      tuple(os.path.realpath(path) for path in hidden), found)


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


# ---- namespaces and mounts (root only) ---------------------------------------------
def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _checked(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def enter_namespaces() -> list[str]:
    """Unshare the pid, network and mount namespaces (each where allowed); return those entered.

    The pid namespace applies to the next child: it becomes that namespace's
    init, and when it ends the kernel kills every process inside.
    """
    libc = _libc()
    if libc.unshare(sum(flag for _, flag in NAMESPACES)) == 0:
        return [name for name, _ in NAMESPACES]
    return [name for name, flag in NAMESPACES if libc.unshare(flag) == 0]


def _mount(libc, source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    _checked(libc.mount(encode(source), encode(target), encode(kind), flags, encode(data)), f"mount {target}")


def arrange_mounts(policy: ReadPolicy, uid: int = NOBODY, keep=()) -> list[str]:
    """In a new mount namespace: let ``uid`` reach the readable paths, and mask the hidden and shared folders.

    A folder on the way to the interpreter that ``uid`` may not enter (for a
    Python under ``/root``) is covered with an empty tmpfs, and the paths the
    worker needs are bound back into it; the rest of that folder is gone.
    ``/tmp``, ``/var/tmp`` and ``/dev/shm`` become empty and private (the
    scratch folder bound back in), hidden folders empty and read-only.
    A hidden folder that holds a readable path or one in ``keep`` (the scratch
    folder) stays. Returns warnings for anything that could not be arranged.
    """
    libc = _libc()
    warnings: list[str] = []
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
    for blocked, needed in blocked_folders(policy.readable, uid).items():
        sources = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in needed}
        try:
            _mount(libc, "tmpfs", blocked, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=64k")
            for path, fd in sources.items():
                os.makedirs(path, exist_ok=True)
                _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        except OSError as failed:
            warnings.append(f"could not make {blocked} reachable for uid {uid}: {failed}")
        finally:
            for fd in sources.values():
                os.close(fd)
    for folder in SHARED_WRITABLE:  # without Landlock, uid nobody could still leave files in these
        scratch = [path for path in keep if _within(os.path.realpath(path), os.path.realpath(folder))]
        if os.path.isdir(folder) and not os.path.islink(folder):
            _private_folder(libc, os.path.realpath(folder), [os.path.realpath(path) for path in scratch], warnings)
    for folder in policy.hidden:
        needed = (*policy.readable, *(os.path.realpath(path) for path in keep))
        if folder != "/" and os.path.isdir(folder) and not any(_within(path, folder) for path in needed):
            try:
                _mount(libc, "tmpfs", folder, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
            except OSError as failed:
                warnings.append(f"could not mask {folder}: {failed}")
    return warnings


def _private_folder(libc, folder: str, keep: list[str], warnings: list[str]) -> None:
    """Cover ``folder`` with an empty tmpfs of its own, binding ``keep`` (paths below it) back in."""
    sources = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in keep}
    try:
        _mount(libc, "tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1m")
        for path, fd in sources.items():
            os.makedirs(path, exist_ok=True)
            _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    except OSError as failed:
        warnings.append(f"could not give the worker a private {folder}: {failed}")
    finally:
        for fd in sources.values():
            os.close(fd)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def blocked_folders(paths, uid: int) -> dict[str, list[str]]:
    """Map each folder ``uid`` cannot enter to the folders below it that must stay reachable."""
    blocked: dict[str, list[str]] = {}
    for path in paths:
        parts = path.split("/")
        for depth in range(2, len(parts)):
            folder = "/".join(parts[:depth])
            info = os.stat(folder)
            if not (info.st_mode & stat.S_IXOTH) and not (info.st_uid == uid and info.st_mode & stat.S_IXUSR):
                blocked.setdefault(folder, []).append(path)
                break
    return {folder: _common_folder(folder, below) for folder, below in blocked.items()}


def _common_folder(blocked: str, paths: list[str]) -> list[str]:
    """One folder to bind under ``blocked`` when the paths share one, else each path's folder."""
    common = os.path.commonpath(paths)
    if not os.path.isdir(common):
        common = os.path.dirname(common)
    if common != blocked and _within(common, blocked):
        return [common]
    return sorted({path if os.path.isdir(path) else os.path.dirname(path) for path in paths})


# ---- limits, identity, process lifetime -------------------------------------------------
def apply_limits(limits: dict) -> None:
    """Resource limits of one worker (soft = hard, so student code cannot raise them)."""
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


def set_parent_death_signal(number: int = signal.SIGKILL) -> None:
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
