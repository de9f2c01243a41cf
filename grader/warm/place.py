"""Where a user's warm check server listens, and what names it: both sides of the socket, no heavy import.

The folder is the user's runtime folder (``platformdirs.user_runtime_dir``:
``$XDG_RUNTIME_DIR/mha-lab``, else ``/tmp/runtime-<uid>/mha-lab``;
``MHA_RUNTIME_DIR`` overrides it), used only when it and its parent are
real folders owned by this user that nobody else may enter (0700), so no
other user can plant or reach a socket there. The socket's name is a digest of
what makes one interpreter's check differ from another's (``server_key``):
the interpreter, its import path, where the grader is, and the environment
that is read while the grader is imported. ``MHA_CHECK_SERVER=off`` turns
the server off; ``MHA_CHECK_SERVER_IDLE`` is how many seconds an idle server
waits for the next check (600 by default).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path

SWITCH_VARIABLE = "MHA_CHECK_SERVER"
IDLE_VARIABLE = "MHA_CHECK_SERVER_IDLE"
RUNTIME_VARIABLE = "MHA_RUNTIME_DIR"
DEFAULT_IDLE = 600.0
SOCKET_PATH_LIMIT = 107  # AF_UNIX's, less the closing NUL
# read while the grader, NumPy, click and rich are imported or set up: a server started under other values is another
# server (the environment read at run time is the client's own: the check runs with it)
KEY_VARIABLES = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "PYTHONPATH", "PYTHONHOME",
                 "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONHASHSEED", "PYTHONWARNINGS", "PYTHONDONTWRITEBYTECODE",
                 "VIRTUAL_ENV", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TMPDIR")
KEY_PREFIXES = ("MHA_", "XDG_", "NPY_", "NUMPY_")


DESCRIPTORS, RELAY = "descriptors", "relay"  # the two kinds of warm server (``server_kind``)


def enabled() -> bool:
    """Whether checks may be sent to a warm server here: one of its kinds runs, and it is not switched off."""
    if os.environ.get(SWITCH_VARIABLE, "").strip().lower() in ("0", "off", "no", "false"):
        return False
    return server_kind() is not None


def server_kind() -> str | None:
    """Which warm server this platform offers, by what it has (never by its name):

    - ``descriptors`` (``server.py``): the Linux sandbox runs here, and a check's process can be forked from the
      server and handed the terminal over a Unix socket whose peer is known (fork, ``send_fds``,
      ``SOCK_SEQPACKET``, ``SO_PEERCRED``);
    - ``relay`` (``standby.py``): the portable worker is the sandbox (Windows, macOS), and a check is sent to a
      process started ahead over ``multiprocessing.connection`` (a named pipe, else a Unix socket whose peer's
      user is known), its output relayed back;
    - None: neither (the check runs cold).
    """
    import socket

    from grader.sandbox.servers import linux_missing

    if linux_missing() is None:
        wanted = ((os, "fork"), (socket, "AF_UNIX"), (socket, "SOCK_SEQPACKET"), (socket, "send_fds"),
                  (socket, "SO_PEERCRED"))
        return DESCRIPTORS if all(hasattr(module, name) for module, name in wanted) else None
    return RELAY if relay_family() is not None else None


def relay_family() -> str | None:
    """The ``multiprocessing.connection`` family a relayed server listens on: a named pipe (``AF_PIPE``,
    Windows) where there is one, else a Unix socket when its peer's user can be asked (None: neither)."""
    from multiprocessing import connection

    if "AF_PIPE" in connection.families:
        return "AF_PIPE"
    import socket

    if "AF_UNIX" in connection.families and (hasattr(socket, "SO_PEERCRED") or hasattr(socket, "LOCAL_PEERCRED")):
        return "AF_UNIX"
    return None


def user_id() -> int | str:
    """Who this process runs as: its uid where there is one, else the login name (Windows)."""
    if hasattr(os, "getuid"):
        return os.getuid()
    import getpass

    try:
        return getpass.getuser()  # USERNAME on Windows
    except (ImportError, KeyError, OSError):
        return ""


def idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get(IDLE_VARIABLE, DEFAULT_IDLE)))
    except ValueError:
        return DEFAULT_IDLE


def server_key(environment: dict[str, str] | None = None) -> str:
    """A digest of what a warm server's state depends on besides its files (which it checks itself)."""
    environment = os.environ if environment is None else environment
    import grader

    kept = {name: value for name, value in environment.items()
            if name in KEY_VARIABLES or name.startswith(KEY_PREFIXES)}
    kept.pop(SWITCH_VARIABLE, None)
    kept.pop(IDLE_VARIABLE, None)
    facts = {"executable": sys.executable, "version": sys.version, "path": sys.path,
             "grader": grader.__file__, "grader_version": grader.__version__, "uid": user_id(),
             "environment": sorted(kept.items())}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def private_folder(*, create: bool) -> Path | None:
    """The user's folder for the server's socket, made if asked; None when it is not safely private."""
    override = os.environ.get(RUNTIME_VARIABLE)
    if override:
        folder = Path(override)
    else:
        import warnings

        import platformdirs

        with warnings.catch_warnings():  # without XDG_RUNTIME_DIR it falls back to /tmp/runtime-<uid>, and says so
            warnings.simplefilter("ignore")
            folder = Path(platformdirs.user_runtime_dir("mha-lab", appauthor=False))
    if create:
        try:
            os.makedirs(folder.parent, mode=0o700, exist_ok=True)
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    if not (_private(folder) and (override or _private(folder.parent))):
        return None
    return folder


def _private(folder: Path) -> bool:
    """A folder (not a link) of this user's that nobody else may read, write or enter. Without user ids
    (Windows) the folder's privacy is its place in the user's own profile (its access list), and what a
    server there answers is guarded by a key only this user can read (``authkey``)."""
    try:
        found = os.lstat(folder)
    except OSError:
        return False
    if not hasattr(os, "getuid"):
        return stat.S_ISDIR(found.st_mode)
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077


def socket_path(folder: Path, key: str) -> Path | None:
    path = folder / f"check-{key}.sock"
    return path if len(os.fsencode(path)) <= SOCKET_PATH_LIMIT else None


def lock_path(folder: Path, key: str) -> Path:
    return folder / f"check-{key}.lock"


SOL_LOCAL = 0  # the level of LOCAL_PEERCRED on macOS and the BSDs (Python's socket module does not name it)
XUCRED = "=IIh16I"  # struct xucred: cr_version, cr_uid, cr_ngroups, cr_groups[16]


def peer_uid(connection) -> int:
    """The user id of the process at the other end of a Unix socket: Linux's SO_PEERCRED, else the
    LOCAL_PEERCRED of macOS and the BSDs (what getpeereid asks)."""
    import socket
    import struct

    if hasattr(socket, "SO_PEERCRED"):
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", credentials)[1]
    return xucred_uid(connection.getsockopt(SOL_LOCAL, socket.LOCAL_PEERCRED, struct.calcsize(XUCRED)))


def xucred_uid(credentials: bytes) -> int:
    """The uid of a ``struct xucred`` (LOCAL_PEERCRED's answer); ValueError for one of another version."""
    import struct

    version, uid = struct.unpack_from("=II", credentials)
    if version != 0:  # XUCRED_VERSION
        raise ValueError(f"a struct xucred of version {version}")
    return uid


def authkey(*, create: bool) -> bytes | None:
    """The key a relayed server and its clients prove to each other (``multiprocessing.connection``'s
    challenge): random, in a file of the user's own cache folder only they may read (0600); None when there is
    none (and ``create`` is false) or it cannot be read."""
    import secrets

    from grader.files import user_cache_dir

    path = user_cache_dir() / "check-server.key"
    try:
        if hasattr(os, "getuid"):  # a key others could read (or planted) proves nothing
            found = os.lstat(path)
            if not stat.S_ISREG(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
                return None
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        if not create:
            return None
    except (OSError, ValueError):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return authkey(create=False)  # another check made it meanwhile
    except OSError:
        return None
    with os.fdopen(descriptor, "w", encoding="ascii") as written:
        written.write(secrets.token_hex(32))
    return authkey(create=False)


def relay_address(folder: Path, key: str, family: str) -> str | None:
    """Where the relayed server of ``key`` listens: a named pipe of this user's key, or a socket in ``folder``."""
    if family == "AF_PIPE":
        return rf"\\.\pipe\mha-check-{key}"
    path = socket_path(folder, key)
    return None if path is None else os.fspath(path)
