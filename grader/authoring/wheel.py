"""Write the grader package as a wheel, for installing on a machine that has no checkout.

A wheel is a zip of the package's files and a ``.dist-info`` folder (PEP 427,
PEP 376). Writing it here, rather than through setuptools, keeps the bundle
of ``mha release --gradescope`` independent of the instructor's build tools
and byte for byte the same from the same files: every entry carries the same
timestamp and the entries are sorted.
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path
from typing import Callable

from grader.paths import PACKAGE_DIR, PROJECT_DIR

FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold
ENTRY_POINTS = "[console_scripts]\nmha = grader.cli:main\n\n[pytest11]\nmha = grader.pytest_plugin\n"


def project_metadata() -> dict:
    """The ``[project]`` table of the project's ``pyproject.toml``."""
    return tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def wheel_name(project: dict) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"


def build_wheel(*, folder: Path, keep: Callable[[str], bool] = lambda relative: True) -> Path:
    """Write ``folder/<name>-<version>-py3-none-any.whl`` holding the files of ``grader/`` that ``keep`` accepts.

    ``keep`` gets each path relative to the package (``suites/x/hidden/t.py``).
    """
    project = project_metadata()
    distribution = f"{project['name'].replace('-', '_')}-{project['version']}"
    files: dict[str, bytes] = {}
    for source in sorted(PACKAGE_DIR.rglob("*")):
        relative = source.relative_to(PACKAGE_DIR).as_posix()
        if source.is_dir() or source.is_symlink() or "__pycache__" in relative.split("/"):
            continue
        if relative.endswith((".pyc", ".pyo")) or not keep(relative):
            continue
        files[f"grader/{relative}"] = source.read_bytes()
    info = f"{distribution}.dist-info"
    files[f"{info}/METADATA"] = _metadata(project).encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: mha-lab\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/entry_points.txt"] = ENTRY_POINTS.encode()
    record = "".join(f"{name},sha256={_digest(data)},{len(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / wheel_name(project)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            entry = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return path


def _metadata(project: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project.get('description', '')}",
             f"Requires-Python: {project.get('requires-python', '>=3.11')}"]
    lines += [f"Requires-Dist: {requirement}" for requirement in project.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
