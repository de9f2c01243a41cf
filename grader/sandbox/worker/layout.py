"""The worker's whole filesystem: a read-only tree holding only what the interpreter needs (root only).

The fork server builds it once, in a mount namespace of its own: an empty
tmpfs, and in it, at their own paths, read-only binds of the folders and
files a ``ReadPolicy`` grants (the standard library, the shared libraries,
NumPy, the granted packages, a few devices). Installed-package folders inside
a granted one (``site-packages``, Debian's ``dist-packages``) and hidden
folders are covered by empty read-only folders; a granted package that lives
in one is bound back on top. Nothing else of the host exists there: no
``/run`` or ``/var/run`` (no socket of the host), no project, no ``/proc``.

Each keeper, in its own copy of that namespace, covers the scratch root (the
temp folder) with a size-limited tmpfs of its own, binds back anything
granted that lives under it (a virtual environment in ``/tmp``), and makes
the worker's scratch folder there; the worker then ``chroot``s into the tree.
What a worker writes lives in its own tmpfs and is gone with its namespace.
"""

from __future__ import annotations

import ctypes
import os
import stat
from dataclasses import dataclass

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
MNT_DETACH = 2
READ_ONLY = MS_RDONLY | MS_NOSUID | MS_NODEV
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


@dataclass(frozen=True)
class Entry:
    """One mount of the tree: ``bind`` a host path read-only at the same path, or ``mask`` it with an empty folder."""

    path: str
    kind: str  # "bind" or "mask"


@dataclass(frozen=True)
class Layout:
    """A built tree: where it is (in the fork server's mount namespace) and how it was made."""

    root: str
    entries: tuple[Entry, ...]
    scratch_root: str


def plan(binds, masks, scratch_root: str) -> tuple[Entry, ...]:
    """The mounts, parents before children; a bind already visible through an earlier one is left out."""
    entries = sorted([Entry(path, "bind") for path in binds if os.path.exists(path)]
                     + [Entry(path, "mask") for path in masks if os.path.isdir(path)],
                     key=lambda entry: (entry.path.count("/"), entry.kind != "mask", entry.path))
    kept: list[Entry] = []
    for entry in entries:
        covering = [earlier for earlier in kept if within(entry.path, earlier.path)]
        deepest = max(covering, key=lambda earlier: earlier.path.count("/"), default=None)
        if entry.kind == "bind" and deepest is not None and deepest.kind == "bind":
            continue  # already readable through the folder that holds it
        if entry.kind == "mask" and (deepest is None or deepest.kind == "mask"):
            continue  # nothing would show it anyway
        kept.append(entry)
    return tuple(kept)


def within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


def _mount(libc, source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    if libc.mount(encode(source), encode(target), encode(kind), flags, encode(data)) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"mount {target}: {os.strerror(number)}")


def build(entries, root: str, scratch_root: str, links=()) -> Layout:
    """Build the tree at ``root`` (an empty folder) in this process's own, new, private mount namespace.

    Entries under ``scratch_root`` are left to each worker (its private
    scratch tmpfs covers that folder); ``links`` are ``(path, target)``
    symbolic links made as they are on the host (``/lib -> usr/lib``).
    Raises OSError if any mount fails.
    """
    libc = _libc()
    os.umask(0o022)
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the host
    _mount(libc, "tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
    masks = [root]
    for entry in entries:
        if not within(entry.path, scratch_root):
            masks += _apply(libc, root, entry)
    for folder in (scratch_root, "/tmp", "/dev"):
        os.makedirs(root + folder, exist_ok=True)
    for path, target in links:
        if not os.path.lexists(root + path):
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            os.symlink(target, root + path)
    for path in DEVICES:  # character devices: bound without nodev
        if os.path.exists(path):
            _bind(libc, path, root + path, MS_RDONLY | MS_NOSUID)
    for folder in reversed(masks):  # children first: a read-only parent cannot get new mount points
        _mount(libc, None, folder, None, MS_REMOUNT | READ_ONLY, "mode=755")
    return Layout(root, tuple(entries), scratch_root)


def _apply(libc, root: str, entry: Entry) -> list[str]:
    """Mount one entry under ``root``; return the writable folder it made, if any, to seal later."""
    target = root + entry.path
    if entry.kind == "mask":
        _mount(libc, "tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16k")
        return [target]
    _bind(libc, entry.path, target, READ_ONLY)
    return []


def _bind(libc, source: str, target: str, flags: int) -> None:
    if stat.S_ISDIR(os.stat(source).st_mode):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    _mount(libc, source, target, None, MS_BIND)
    _mount(libc, None, target, None, MS_BIND | MS_REMOUNT | flags)  # a bind takes its flags on a remount


def private_scratch(layout: Layout, scratch: str, size_mb: int, uid: int | None) -> None:
    """In this keeper's own copy of the namespace: a fresh ``size_mb`` tmpfs over the scratch root,
    the granted paths that live under it bound back, and the worker's ``scratch`` folder in it."""
    libc = _libc()
    target = layout.root + layout.scratch_root
    _mount(libc, "tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, f"mode=755,size={size_mb}m")
    masks = []
    for entry in layout.entries:
        if within(entry.path, layout.scratch_root):
            masks += _apply(libc, layout.root, entry)
    for folder in reversed(masks):
        _mount(libc, None, folder, None, MS_REMOUNT | READ_ONLY, "mode=755")
    folder = layout.root + scratch
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    os.mkdir(folder, 0o700)
    if uid is not None:
        os.chown(folder, uid, uid)


def resize_scratch(layout: Layout, size_mb: int) -> None:
    """Give this keeper's scratch tmpfs another size (before its worker wrote anything)."""
    _mount(_libc(), None, layout.root + layout.scratch_root, None, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC,
           f"size={size_mb}m")


def enter(layout: Layout, scratch: str) -> None:
    """Make the tree this process's whole filesystem (it then holds no descriptor of a folder outside)."""
    os.chroot(layout.root)
    os.chdir(scratch)


def dismantle(layout: Layout) -> None:
    """Detach the tree (at the server's end), so that its mount point can be removed."""
    _libc().umount2(layout.root.encode(), MNT_DETACH)
