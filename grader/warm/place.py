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


def enabled() -> bool:
    """Whether checks may be sent to a warm server here: Linux, descriptors passable, not switched off."""
    if os.environ.get(SWITCH_VARIABLE, "").strip().lower() in ("0", "off", "no", "false"):
        return False
    import socket

    return (sys.platform.startswith("linux") and hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds")
            and hasattr(os, "fork"))


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
             "grader": grader.__file__, "grader_version": grader.__version__, "uid": os.getuid(),
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
    """A folder (not a link) of this user's that nobody else may read, write or enter."""
    try:
        found = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077


def socket_path(folder: Path, key: str) -> Path | None:
    path = folder / f"check-{key}.sock"
    return path if len(os.fsencode(path)) <= SOCKET_PATH_LIMIT else None


def lock_path(folder: Path, key: str) -> Path:
    return folder / f"check-{key}.lock"


def peer_uid(connection) -> int:
    """The user id of the process at the other end of a Unix socket (Linux's SO_PEERCRED)."""
    import socket
    import struct

    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", credentials)[1]
