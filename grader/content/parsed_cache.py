"""Content files kept parsed between runs, so that a check reads its TOML without parsing it.

A student's ``mha check`` reads some 27 TOML files (every exercise's spec and
checks, the catalog of mistakes, the messages); Python's ``tomllib`` is pure
Python and parses them in about 40 ms, a third of the floor of a process that
only imports NumPy. What it gives is kept in one JSON file in the user's cache
folder (``grader.files.user_cache_dir``), by file path, under a digest of the
file's bytes: a file whose bytes changed is parsed again, so an edit is seen at
once. The store is read once per process and written once, as it ends, when a
file was parsed. JSON holds what TOML parses exactly (tables, arrays, strings, numbers,
booleans); a file with a date or time in it is simply not kept. Each hit is
decoded afresh, so no caller shares its data with another.

A store that cannot be read or written is no error: the files are parsed, as
without a cache. It is kept per Python minor version (``tomllib`` is part of
it) and holds at most ``MAX_ENTRIES`` files, the least recently stored dropped.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

MAX_ENTRIES = 128  # the project has about 100 content files; a check reads 27
STORE_NAME = f"content-py{sys.version_info[0]}{sys.version_info[1]}.json"

_store: dict[str, list[str]] | None = None  # path -> [digest of the bytes, the parsed data as JSON]
_saving = False  # the store is written once, when the process ends, however many files were parsed


def parsed_toml(path: Path) -> dict:
    """``tomllib``'s reading of the file at ``path``, from the store when its bytes are the ones kept.

    OSError, UnicodeDecodeError and ``tomllib.TOMLDecodeError`` as ``tomllib.load`` raises them."""
    raw = Path(path).read_bytes()
    digest = hashlib.blake2b(raw, digest_size=16).hexdigest()
    name = str(Path(path).absolute())
    store = _loaded()
    kept = store.get(name)
    if kept is not None and kept[0] == digest:
        try:
            return json.loads(kept[1])
        except ValueError:
            pass
    import tomllib  # only for a file not kept: most checks parse none

    data = tomllib.loads(raw.decode())
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # a date or a time: JSON cannot give it back as it was
        return data
    store.pop(name, None)
    store[name] = [digest, text]
    while len(store) > MAX_ENTRIES:
        del store[next(iter(store))]
    _save_at_exit()
    return data


def _loaded() -> dict[str, list[str]]:
    global _store
    if _store is None:
        _store = {}
        try:
            kept = json.loads(_store_path().read_text(encoding="utf-8"))
            if isinstance(kept, dict):
                _store = {name: entry for name, entry in kept.items()
                          if isinstance(entry, list) and len(entry) == 2 and all(isinstance(part, str)
                                                                                 for part in entry)}
        except (OSError, ValueError):
            pass
    return _store


def _save_at_exit() -> None:
    global _saving
    if not _saving:
        import atexit

        _saving = True
        atexit.register(_save)


def _save() -> None:
    from grader.files import atomic_write_text

    try:
        atomic_write_text(_store_path(), json.dumps(_loaded(), ensure_ascii=False, separators=(",", ":")))
    except OSError:
        pass


def _store_path() -> Path:
    from grader.files import user_cache_dir

    return user_cache_dir() / STORE_NAME
