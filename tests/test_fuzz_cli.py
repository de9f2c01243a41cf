"""Every input to `mha check` and `mha grade` ends in a message, never a traceback (property-based, Hypothesis).

Malformed notebooks (odd JSON of every shape, cells of the wrong types), odd bytes and odd file names go
through the real CLI: click's CliRunner for the many examples, the installed `mha` for a few. A run ends
with exit status 0, 1 or 2 and its output holds no traceback; `mha grade` writes one row per entry.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import PROJECT, require
from grader.cli import root

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
# no example database in the checkout; a failure prints the example and the seed to reproduce it
FAST = settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
odd_json = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
cell_types = st.sampled_from(["code", "markdown", "raw", None, 3, ["code"]])
sources = st.one_of(st.text(max_size=40), st.lists(st.text(max_size=20) | scalars, max_size=4), odd_json)
cells = st.fixed_dictionaries({"cell_type": cell_types, "source": sources},
                              optional={"metadata": odd_json | st.fixed_dictionaries(
                                  {"nbgrader": odd_json | st.fixed_dictionaries({"grade": scalars,
                                                                                 "solution": scalars})})})
notebooks = st.one_of(odd_json, st.fixed_dictionaries({"cells": st.lists(cells, max_size=4) | odd_json},
                                                      optional={"nbformat": odd_json, "metadata": odd_json}))
# code that reaches the worker only as text: the trusted side must never parse it into a crash
snippets = st.sampled_from(["", "def softmax(", "import os\nos._exit(3)", "raise SystemExit(0)", "\x00",
                            "x = 1\n" * 3, "def softmax(x):\n    return x\n", "%%bash\nls", "!ls", "class M:\n"])


def check_ends_in_a_message(path, *options):
    done = CliRunner().invoke(root, ["check", str(path), "--assignment", "multihead_attention", *options])
    assert done.exit_code in (0, 1, 2), (done.exit_code, done.output, done.exception)
    assert done.exception is None or isinstance(done.exception, SystemExit), repr(done.exception)
    assert "Traceback" not in done.output, done.output
    return done


@FAST
@given(notebook=notebooks)
def test_check_on_any_json_notebook_ends_in_a_message(tmp_path_factory, notebook):
    path = tmp_path_factory.mktemp("nb") / "work.ipynb"
    path.write_text(json.dumps(notebook, allow_nan=True), encoding="utf-8")
    check_ends_in_a_message(path, "--json")


@FAST
@given(data=st.binary(max_size=200), suffix=st.sampled_from([".py", ".ipynb"]))
def test_check_on_any_bytes_ends_in_a_message(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("bytes") / f"work{suffix}"
    path.write_bytes(data)
    check_ends_in_a_message(path)


KINDS = ["file", "file", "folder", "fifo", "symlink", "second name of honest.py", "second name of a file outside"]


def make_entry(submissions: Path, entry: str, content: str, kind: str, outside: Path) -> None:
    """``entry`` in the class folder as ``kind``: what anyone with access to a shared hand-in folder can leave."""
    import os

    path = submissions / entry
    if kind == "file":
        path.write_text(content, encoding="utf-8")
    elif kind == "folder":
        path.mkdir()
        (path / "multihead_attention.py").write_text(content, encoding="utf-8")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        path.symlink_to(REFERENCE)
    elif kind == "second name of honest.py":
        os.link(submissions / "honest.py", path)
    else:
        os.link(outside, path)


def expected_rows(entries: dict[str, str]) -> set[str]:
    """The raw stems that are students: every entry but skipped names, answers files and files of other suffixes."""
    from grader.entries.entry import SUFFIXES, is_skipped
    from grader.practice import is_answers_file

    rows = set()
    for entry, kind in entries.items():
        suffix = Path(entry).suffix
        if is_skipped(entry) or (is_answers_file(entry) and entry != "answers.toml"):
            continue
        if kind == "folder" and entry != "answers.toml":
            rows.add(entry)
        elif kind == "symlink":
            rows.add(Path(entry).stem if suffix in SUFFIXES else entry)
        elif suffix in SUFFIXES:
            rows.add(Path(entry).stem)
    return rows


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(names=st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
                              min_size=1, max_size=12), min_size=1, max_size=4, unique=True),
       contents=st.lists(notebooks.map(json.dumps) | snippets, min_size=4, max_size=4),
       suffixes=st.lists(st.sampled_from([".py", ".ipynb", "", ".answers.toml"]), min_size=4, max_size=4),
       kinds=st.lists(st.sampled_from(KINDS), min_size=4, max_size=4))
def test_grade_on_odd_names_and_contents_writes_one_row_per_entry(tmp_path_factory, names, contents, suffixes,
                                                                  kinds):
    folder = tmp_path_factory.mktemp("class")
    submissions = folder / "class"
    submissions.mkdir()
    outside = folder / "not-handed-in.py"  # a file nobody handed in: never graded under a second name
    shutil.copy(REFERENCE, outside)
    shutil.copy(REFERENCE, submissions / "honest.py")
    made = {"honest.py": "file"}
    for name, content, suffix, kind in zip(names, contents, suffixes, kinds):
        entry = f"{name}{suffix}"
        if entry in (".", "..") or entry in made or len(entry.encode()) > 200:
            continue
        try:
            make_entry(submissions, entry, content, kind, outside)
        except (OSError, ValueError):
            continue
        made[entry] = kind
    done = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(folder / "out"), "--jobs", "1"])
    assert done.exit_code == 0, (done.output, done.exception)
    assert "Traceback" not in done.output
    results = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))
    assert len(results) == len(expected_rows(made)), (made, [r["student"] for r in results])  # no row lost
    by_student = {r["student"]: r for r in results}
    honest = by_student["honest"]
    assert honest["status"] == "graded" and honest["score"] == honest["max_score"], (made, honest)
    for result in results:  # a file with a name outside the class is never graded
        assert result["status"] == "error" or made.get(result["file"]) != "second name of a file outside", \
            (made, result)


def test_the_installed_command_ends_in_a_message_on_odd_files(tmp_path):
    command = shutil.which("mha", path=str(Path(sys.executable).parent)) or shutil.which("mha")
    require(command is not None, "the mha command is not installed in this environment")
    odd = {
        "deep.ipynb": '{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "cells.ipynb": '{"cells": {"cell_type": "code"}}',
        "binary.py": "print(1)\x00",
        "latin.py": None,
        "nan.ipynb": '{"cells": [{"cell_type": "code", "source": NaN}]}',
    }
    for name, text in odd.items():
        path = tmp_path / name
        if text is None:
            path.write_bytes(b"caf\xe9 = 1\n")
        else:
            path.write_text(text, encoding="utf-8")
        done = subprocess.run([command, "check", str(path), "--assignment", "multihead_attention"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode in (1, 2), (name, done.stdout, done.stderr)
        assert "Traceback" not in done.stdout + done.stderr, (name, done.stderr)
        assert done.stdout.strip() or done.stderr.strip(), name
