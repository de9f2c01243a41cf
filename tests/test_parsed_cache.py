"""Content files kept parsed in the user's cache: the same data as tomllib gives, an edit seen at once."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from grader.content import parsed_cache
from grader.content.loader import load_toml
from grader.errors import ContentError
from grader.paths import ASSIGNMENTS_DIR, CONTENT_DIR


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(parsed_cache, "_store", None)
    monkeypatch.setattr(parsed_cache, "_saving", False)
    return tmp_path / "cache" / parsed_cache.STORE_NAME


def _fresh_process(store_path, path) -> dict:
    """What a new process reads from the store (and whether it had to parse the file)."""
    code = ("import json, sys, tomllib\n"
            "parsed = []\n"
            "real = tomllib.loads\n"
            "tomllib.loads = lambda text: parsed.append(1) or real(text)\n"
            "from grader.content.parsed_cache import parsed_toml\n"
            f"data = parsed_toml({str(path)!r})\n"
            "print(json.dumps({'data': data, 'parsed': len(parsed)}))\n")
    env = {"MHA_CACHE_DIR": str(store_path.parent), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def test_every_content_file_reads_back_as_tomllib_parses_it(store):
    files = [*sorted(CONTENT_DIR.glob("*.toml")), *sorted(ASSIGNMENTS_DIR.glob("*/*.toml"))]
    assert len(files) > 20
    for path in files:
        parsed_cache.parsed_toml(path)
    parsed_cache._save()
    parsed_cache._store = None  # as in the next process: everything from the store
    for path in files:
        assert parsed_cache.parsed_toml(path) == tomllib.loads(path.read_text(encoding="utf-8")), path


def test_a_second_process_parses_nothing_and_an_edit_is_seen(store, tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('schema_version = 1\nname = "first"\n[table]\nx = [1, 2.5, true]\n', encoding="utf-8")
    first = _fresh_process(store, path)
    assert first == {"data": {"schema_version": 1, "name": "first", "table": {"x": [1, 2.5, True]}}, "parsed": 1}
    assert store.is_file()
    assert _fresh_process(store, path) == {**first, "parsed": 0}
    path.write_text('schema_version = 1\nname = "second"\n', encoding="utf-8")
    assert _fresh_process(store, path) == {"data": {"schema_version": 1, "name": "second"}, "parsed": 1}


def test_callers_never_share_data(store, tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text("schema_version = 1\nitems = [1, 2]\n", encoding="utf-8")
    parsed_cache.parsed_toml(path)["items"].append(3)
    assert parsed_cache.parsed_toml(path) == {"schema_version": 1, "items": [1, 2]}
    parsed_cache.parsed_toml(path)["items"].append(4)
    assert parsed_cache.parsed_toml(path)["items"] == [1, 2]


def test_a_date_is_given_as_tomllib_gives_it_and_not_kept(store, tmp_path):
    path = tmp_path / "dated.toml"
    path.write_text("schema_version = 1\nwhen = 2026-12-01\n", encoding="utf-8")
    data = parsed_cache.parsed_toml(path)
    assert data == tomllib.loads(path.read_text(encoding="utf-8"))
    assert str(path.absolute()) not in parsed_cache._loaded()


def test_a_broken_store_or_an_unwritable_folder_is_no_error(store, tmp_path, monkeypatch):
    store.parent.mkdir(parents=True)
    store.write_text("{not json", encoding="utf-8")
    path = tmp_path / "spec.toml"
    path.write_text("schema_version = 1\nname = 'x'\n", encoding="utf-8")
    assert parsed_cache.parsed_toml(path)["name"] == "x"
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv("MHA_CACHE_DIR", str(blocked / "cache"))
    parsed_cache._save()  # quietly nothing
    assert parsed_cache.parsed_toml(path)["name"] == "x"


def test_bad_files_are_still_content_errors(store, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("schema_version = 1\n[table\n", encoding="utf-8")
    with pytest.raises(ContentError, match="bad.toml"):
        load_toml(bad)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"schema_version = 1\nname = '\xe9'\n")
    with pytest.raises(ContentError, match="latin.toml"):
        load_toml(latin)
    with pytest.raises(ContentError, match="missing.toml"):
        load_toml(tmp_path / "missing.toml")
    assert str(bad.absolute()) not in parsed_cache._loaded()


def test_the_store_keeps_at_most_its_limit(store, tmp_path, monkeypatch):
    monkeypatch.setattr(parsed_cache, "MAX_ENTRIES", 3)
    paths = []
    for number in range(5):
        path = tmp_path / f"f{number}.toml"
        path.write_text(f"schema_version = 1\nn = {number}\n", encoding="utf-8")
        parsed_cache.parsed_toml(path)
        paths.append(str(path.absolute()))
    assert list(parsed_cache._loaded()) == paths[2:]
