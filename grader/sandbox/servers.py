"""Starting the fork server student code runs under, without importing NumPy here.

``start_server`` starts one and waits for it; ``launch_server`` returns as
soon as its process runs, so that a single check (``mha check``) does its
own start-up (the grader's imports, NumPy's among them, and reading the
cases) while the server imports NumPy. Both hide from every worker what no
submission may read (``default_hidden``). ``grader.sandbox.client`` gives
them too.
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.sandbox.link import ForkServer, ServerLaunch

STUDENT_PACKAGES = ("scipy",)  # besides NumPy, where installed: e.g. scipy.special.softmax in a correct variant


def start_server(*, hidden=(), packages=STUDENT_PACKAGES, without=(), spares: int = 1) -> ForkServer:
    """A fork server for many submissions; ``hidden`` folders (e.g. the output folder) are masked too.

    Student code may import the standard library, NumPy and ``packages``.
    ``without`` ("landlock", "namespaces", "cgroups", "uid-pool", "spares")
    leaves a layer out, to check the fallbacks (``MHA_SANDBOX_WITHOUT`` adds to it). ``spares``: workers kept made ahead of
    requests, each for one request (e.g. the number of submissions graded at once).
    """
    return launch_server(hidden=hidden, packages=packages, without=without, spares=spares).ready()


def launch_server(*, hidden=(), packages=STUDENT_PACKAGES, without=(), spares: int = 1) -> ServerLaunch:
    """``start_server``, returning as soon as the server's process runs; ``.ready()`` gives the server.

    A single check launches it first and does its own start-up meanwhile.
    """
    without = (*without, *layers_left_out())
    return ForkServer.launch(hidden=(*default_hidden(), *hidden), packages=packages, without=without, spares=spares)


def layers_left_out() -> tuple[str, ...]:
    """Layers the instructor leaves out of every server of this process: ``MHA_SANDBOX_WITHOUT`` (names
    separated by commas), to see or test a fallback through the real commands on a machine that has all."""
    return tuple(name.strip() for name in os.environ.get("MHA_SANDBOX_WITHOUT", "").split(",") if name.strip())


def hideable(folder: Path) -> bool:
    """Whether workers may lose sight of ``folder``: not when it holds the interpreter (a venv beside alice.py)."""
    import sys

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
