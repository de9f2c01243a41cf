"""The user's own data folder: quiz progress, unlocked functions, drill history.

It is ``platformdirs.user_data_dir("mha-lab")`` unless ``MHA_DATA_DIR`` names
another folder (tests and shared machines use that). Files are small JSON
documents with a ``schema_version``, written atomically so an interrupted
quiz never leaves half a file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from grader.errors import ConfigError
from grader.files import atomic_write_text

DATA_DIR_VARIABLE = "MHA_DATA_DIR"
SCHEMA_VERSION = 1


def data_dir() -> Path:
    """The folder for the user's progress (created on first write, not here)."""
    override = os.environ.get(DATA_DIR_VARIABLE)
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_data_dir("mha-lab", appauthor=False))


def read_document(name: str, default: dict[str, Any]) -> dict[str, Any]:
    """The JSON document ``name`` in the data folder, or ``default`` when absent."""
    path = data_dir() / name
    if not path.is_file():
        return default
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(
            f"{path} is unreadable ({error}); delete it to start afresh "
            f"or set {DATA_DIR_VARIABLE} to another folder"
        ) from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(f"{path}: expected a JSON object with schema_version {SCHEMA_VERSION}")
    return data


def write_document(name: str, data: dict[str, Any]) -> Path:
    """Write ``data`` (plus ``schema_version``) as ``name`` in the data folder, atomically."""
    folder = data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    payload = json.dumps({"schema_version": SCHEMA_VERSION, **data}, ensure_ascii=False, indent=1)
    atomic_write_text(path, payload + "\n")
    return path
