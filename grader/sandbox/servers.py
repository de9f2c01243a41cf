"""Which worker a run gets: the Linux sandbox (a fork server), or the portable worker where that cannot run.

``isolation`` is one of ``ISOLATIONS``: ``linux`` (the fork server, or an
error saying why not: what ``mha grade`` uses unless told otherwise),
``portable`` (``grader.sandbox.portable``, asked for), ``auto`` (the Linux
sandbox where it runs, else the portable worker: what ``mha check`` and the
notebook's ``check()`` use). ``MHA_ISOLATION`` in the environment sets the
default of ``mha check``.

It imports no NumPy, so that ``mha check`` can ``launch_server`` the fork
server before the grader's own imports (NumPy's among them, and reading the
cases) and have the two start-ups overlap; what every server hides from its
workers (``default_hidden``) and the layers an instructor leaves out
(``layers_left_out``) are here for the same reason.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ISOLATIONS = ("auto", "linux", "portable")
STUDENT_PACKAGES = ("scipy",)  # besides NumPy, where installed: e.g. scipy.special.softmax in a correct variant
ENVIRONMENT_VARIABLE = "MHA_ISOLATION"


def linux_missing() -> str | None:
    """Why the Linux sandbox cannot run on this machine (None: it may), from what the platform offers."""
    if not sys.platform.startswith("linux"):
        return f"{_platform_name()} has neither Landlock nor Linux namespaces"
    for module in ("fcntl", "resource"):
        try:
            __import__(module)
        except ImportError:
            return f"this Python has no {module} module"
    import socket

    wanted = [(os, "fork"), (os, "setsid"), (os, "pipe2"), (socket, "AF_UNIX"), (socket, "SOCK_SEQPACKET"),
              (socket, "send_fds")]
    absent = [f"{module.__name__}.{name}" for module, name in wanted if not hasattr(module, name)]
    return f"this Python lacks {', '.join(absent)}" if absent else None


def _platform_name() -> str:
    return {"win32": "Windows", "darwin": "macOS", "cygwin": "Cygwin"}.get(sys.platform, sys.platform)


def chosen_isolation(given: str | None = None) -> str:
    """``given``, else ``MHA_ISOLATION``, else ``auto``; a bad value is a ValueError naming where it came from."""
    value = given if given is not None else os.environ.get(ENVIRONMENT_VARIABLE, "auto").strip().lower() or "auto"
    if value not in ISOLATIONS:
        where = "" if given is not None else f" (from {ENVIRONMENT_VARIABLE})"
        raise ValueError(f"isolation {value!r}{where} is not one of {', '.join(ISOLATIONS)}")
    return value


def open_server(*, isolation: str, hidden=(), packages=(), without=(), spares: int = 1, limits: dict | None = None):
    """A ``ForkServer`` or a ``PortableServer`` for ``isolation``; ForkServerError when ``linux`` cannot start.

    ``limits`` (the fields of ``Limits``): the portable server's first worker starts now with them.
    """
    from grader.sandbox.link import ForkServer, ForkServerError
    from grader.sandbox.portable import PortableServer

    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation {isolation!r} is not one of {', '.join(ISOLATIONS)}")
    missing = linux_missing() if isolation != "portable" else None
    if isolation == "linux" and missing:
        raise ForkServerError(f"the Linux sandbox cannot run here: {missing}")
    if isolation == "portable" or missing:
        return PortableServer.start(packages=packages, spares=spares, without=without, limits=limits,
                                    reason=missing or "asked for")
    try:
        return ForkServer.start(hidden=hidden, packages=packages, without=without, spares=spares)
    except ForkServerError as failed:
        if isolation == "linux":
            raise
        return PortableServer.start(packages=packages, spares=spares, without=without, limits=limits,
                                    reason=f"the fork server did not start: {str(failed)[:200]}")


def attach_server(address: str):
    """The server at ``address`` (a fork server's socket, or a portable server's settings) from another process."""
    from grader.sandbox.link import ForkServer
    from grader.sandbox.portable import ADDRESS_PREFIX, PortableServer

    if address.startswith(ADDRESS_PREFIX):
        return PortableServer.attach(address)
    return ForkServer.attach(address, {})


def launch_server(*, hidden=(), packages=STUDENT_PACKAGES, without=(), spares: int = 1):
    """A Linux fork server's process started, not waited for (``ServerLaunch``; ``.ready()`` gives the
    ``ForkServer``, or ForkServerError): ``client.start_server``'s hiding and layers, for a caller that has
    its own start-up to do meanwhile."""
    from grader.sandbox.link import ForkServer

    return ForkServer.launch(hidden=(*default_hidden(), *hidden), packages=packages,
                             without=(*without, *layers_left_out()), spares=spares)


class KeptLaunch:
    """A fork server another process owns and keeps (the warm check server's), as a ``ServerLaunch``:
    ``ready()`` attaches to it (one handle, whose pool holds this process's workers), ``stop()`` settles those
    workers and leaves the server running."""

    def __init__(self, address: str, info: dict):
        self.address, self.info = address, info
        self._server = None

    def ready(self):
        from grader.sandbox.link import ForkServer

        if self._server is None:
            self._server = ForkServer.attach(self.address, self.info)
        return self._server

    def stop(self) -> None:
        self.ready().stop()  # attached: its workers settled, no process of its own to end


class KeptPortable:
    """A portable server this process keeps across its check (a relayed warm server's, whose spare worker was
    started ahead), as a ``ServerLaunch``: ``ready()`` gives it, ``stop()`` settles the check's ended workers
    and keeps the server (and its next spare) for the process's owner to stop."""

    def __init__(self, server):
        self.server = server

    def ready(self):
        return self.server

    def stop(self) -> None:
        self.server.pool.settle()


_kept: list[KeptLaunch | KeptPortable] = []


def keep_server(server) -> None:
    """Have this process's checks use ``server`` (a ``ForkServer`` another process keeps) instead of
    launching their own."""
    _kept[:] = [KeptLaunch(server.address, server.info)]


def keep_portable(server) -> None:
    """Have this process's checks use ``server`` (a ``PortableServer`` with its worker started ahead)."""
    _kept[:] = [KeptPortable(server)]


def kept_launch() -> KeptLaunch | KeptPortable | None:
    """The fork server ``keep_server`` gave this process, if any."""
    return _kept[0] if _kept else None


def layers_left_out() -> tuple[str, ...]:
    """Layers the instructor leaves out of every server of this process: ``MHA_SANDBOX_WITHOUT`` (names
    separated by commas), to see or test a fallback through the real commands on a machine that has all."""
    return tuple(name.strip() for name in os.environ.get("MHA_SANDBOX_WITHOUT", "").split(",") if name.strip())


def hideable(folder: Path) -> bool:
    """Whether workers may lose sight of ``folder``: not when it holds the interpreter (a venv beside alice.py)."""
    folder = Path(folder).resolve()
    needed = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parent}
    return not any(path.is_relative_to(folder) for path in needed)


def default_hidden() -> tuple[str, ...]:
    """Folders no worker should see even without Landlock: the project, the solutions, the course key."""
    from grader import paths
    from grader.seeding import course_key_file

    folders = [course_key_file().parent]
    if (paths.PROJECT_DIR / "pyproject.toml").exists():  # a checkout, not an installed package
        folders.append(paths.PROJECT_DIR)
    if paths.solutions_dir() is not None:
        folders.append(paths.solutions_dir())
    return tuple(str(Path(folder).resolve()) for folder in folders)
