"""Wheels of mha-lab's runtime dependencies, made from the distributions installed here, for offline installs.

A test that installs the grader in a fresh virtual environment (the Gradescope
bundle's ``setup.sh``) points pip at this folder with ``PIP_NO_INDEX=1`` and
``PIP_FIND_LINKS``, so it needs no network and installs in seconds. Each wheel
holds the files the installed distribution's ``RECORD`` lists inside
site-packages, with a fresh ``RECORD``; console scripts are written again by pip
from ``entry_points.txt``.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import zipfile
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:  # pragma: no cover - pip always vendors it
    from pip._vendor.packaging.requirements import Requirement

SKIPPED_INFO = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def runtime_closure(also: tuple[str, ...] = ()) -> list[importlib.metadata.Distribution]:
    """The installed distributions mha-lab needs at run time (no extras), as its ``pyproject.toml`` says today,
    and those of the requirements ``also`` (e.g. ``ipykernel`` for a notebook kernel, ``setuptools`` to build).

    (Not the installed mha-lab's own metadata, which is as old as its last ``pip install``.)
    """
    from grader.authoring.wheel import project_metadata

    seen: dict[str, importlib.metadata.Distribution] = {}
    pending = [Requirement(text) for text in (*project_metadata().get("dependencies", ()), *also)]
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        key = _normal(requirement.name)
        if key in seen:
            continue
        distribution = importlib.metadata.distribution(requirement.name)
        seen[key] = distribution
        pending.extend(Requirement(text) for text in distribution.requires or ())
    return sorted(seen.values(), key=lambda item: _normal(item.metadata["Name"]))


def build_wheelhouse(folder: Path, also: tuple[str, ...] = ()) -> list[Path]:
    """One wheel per distribution of ``runtime_closure(also)`` in ``folder``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    return [repack(distribution, folder) for distribution in runtime_closure(also)]


def repack(distribution: importlib.metadata.Distribution, folder: Path) -> Path:
    info = Path(distribution._path)  # the .dist-info folder
    site = info.parent
    wheel_text = (info / "WHEEL").read_text(encoding="utf-8")
    tags = [line.split(":", 1)[1].strip() for line in wheel_text.splitlines() if line.startswith("Tag:")]
    name = re.sub(r"[-_.]+", "_", distribution.metadata["Name"])
    path = folder / f"{name}-{distribution.version}-{_compressed(tags or ['py3-none-any'])}.whl"
    if path.exists():
        return path
    records = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for file in distribution.files or ():
            relative = Path(file)
            if relative.parts[0] == ".." or "__pycache__" in relative.parts:
                continue
            if relative.parts[0] == info.name and relative.name in SKIPPED_INFO:
                continue
            source = site / relative
            if not source.is_file():
                continue
            data = source.read_bytes()
            archive.writestr(relative.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{relative.as_posix()},sha256={digest},{len(data)}")
        records.append(f"{info.name}/RECORD,,")
        archive.writestr(f"{info.name}/RECORD", "\n".join(records) + "\n")
    return path


def _compressed(tags: list[str]) -> str:
    """Tags ``py2-none-any`` and ``py3-none-any`` as the one a file name holds: ``py2.py3-none-any``."""
    parts = [tag.split("-") for tag in tags]
    return "-".join(".".join(dict.fromkeys(part[index] for part in parts)) for index in range(3))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
