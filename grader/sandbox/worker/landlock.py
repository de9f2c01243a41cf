"""Landlock, the Linux sandbox an unprivileged process applies to itself.

A small ctypes layer over the three system calls, standard library only (the
fork server loads it without the grader package). It covers what the worker
needs and the PyPI binding lacks: filesystem rules (ABI 1-5), denying TCP
bind and connect (ABI 4), scoping signals and abstract UNIX sockets to the
sandbox (ABI 6), and denying connections to pathname UNIX sockets outside the
writable folders (ABI 8, ``RESOLVE_UNIX``). ``abi_version()`` asks the kernel; ``restrict_self`` handles
every right the kernel knows, grants the listed paths, and reports what was
enforced. Once applied it cannot be lifted, and children inherit it.

Reference: the kernel's ``Documentation/userspace-api/landlock.rst``.
"""

from __future__ import annotations

import ctypes
import os
import stat
from dataclasses import dataclass

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights, with the ABI that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV, RESOLVE_UNIX = 1 << 13, 1 << 14, 1 << 15, 1 << 16  # ABI 2, 3, 5, 8
FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1,
                    6: (1 << 16) - 1, 7: (1 << 16) - 1, 8: (1 << 17) - 1}
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only rights a rule on a file may grant
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR

NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6


class LandlockError(OSError):
    """The kernel refused to build or apply a ruleset."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class Enforced:
    """What one ``restrict_self`` put in force."""

    abi: int
    filesystem: bool = False
    network: bool = False
    signals: bool = False
    unix_sockets: bool = False  # connecting to a pathname UNIX socket outside the writable folders is denied

    def describe(self) -> str:
        if not self.filesystem:
            return "no landlock"
        parts = (["fs"] + (["net"] if self.network else []) + (["signals"] if self.signals else [])
                 + (["unix"] if self.unix_sockets else []))
        return f"landlock ABI {self.abi} ({', '.join(parts)})"


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _check(result: int, what: str) -> int:
    if result < 0:
        number = ctypes.get_errno()
        raise LandlockError(number, f"{what}: {os.strerror(number)}")
    return result


def abi_version() -> int:
    """The Landlock ABI of the running kernel; 0 when it has none or it is disabled."""
    try:
        version = _libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except (OSError, AttributeError):  # no libc syscall(): not Linux
        return 0
    return int(version) if version > 0 else 0  # ENOSYS: not built in; EOPNOTSUPP: disabled at boot


def restrict_self(*, readable=(), writable=(), abi: int | None = None) -> Enforced:
    """Confine this process: read only ``readable``, write only beneath ``writable``, no TCP, no outside signals.

    Paths that do not exist are skipped. Returns what was enforced; with no
    Landlock in the kernel, nothing (``Enforced(abi=0)``), and the caller
    decides whether that is acceptable.
    """
    abi = abi_version() if abi is None else abi
    if abi <= 0:
        return Enforced(abi=0)
    libc = _libc()
    handled_fs = FS_RIGHTS_BY_ABI[min(abi, max(FS_RIGHTS_BY_ABI))]
    attr = _RulesetAttr(handled_access_fs=handled_fs,
                        handled_access_net=(NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0,
                        scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8  # older kernels reject fields they do not know
    ruleset = _check(libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)),
                     "landlock_create_ruleset")
    try:
        for path in readable:
            _allow(libc, ruleset, path, READ_RIGHTS & handled_fs)
        for path in writable:
            _allow(libc, ruleset, path, handled_fs)
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return Enforced(abi=abi, filesystem=True, network=abi >= 4, signals=abi >= 6, unix_sockets=abi >= 8)


def _allow(libc, ruleset: int, path, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        _check(libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule),
                            ctypes.c_uint32(0)), f"landlock_add_rule({path})")
    finally:
        os.close(fd)
