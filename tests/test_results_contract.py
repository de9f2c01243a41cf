"""The class outputs of a graded class, byte for byte: results.json (DESIGN.md's contract) and its renderings.

``examples/demo_class`` is graded through the CLI with a fixed course key,
adjustments of every kind (late, waived by an extension, manual, on an error)
and both extra formats; the files must equal those kept in
``tests/fixtures/results_contract/``, which were written before the batch
carried result dataclasses instead of dicts. Only what a machine changes is
masked: durations, the sandbox's description of its isolation and the
calibrated time limit a timeout names. A sharded run merged by ``mha merge``
must give the same bytes.

After a deliberate change of the contract, write the fixtures again with
``python tests/test_results_contract.py OUT`` (OUT: an ``mha grade`` output
folder made with this module's options) and review the diff.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import root
from grader.paths import PROJECT_DIR

DEMO = PROJECT_DIR / "examples" / "demo_class"
FIXTURES = Path(__file__).parent / "fixtures" / "results_contract"
KEY = "contract-key"
# one student each: adjusted late, a late penalty waived, adjusted above the maximum, an error, a timeout
GRADESCOPE_STUDENTS = ("amara_einsum", "bilal_loops", "chen_float32", "jonas_syntax_error", "kemal_infinite_loop")
_MASKS = (
    (re.compile(r'"duration": [0-9.e+-]+'), '"duration": 0'),
    (re.compile(r'"execution_time": [0-9.e+-]+'), '"execution_time": 0'),
    (re.compile(r'"isolation": "(?:[^"\\]|\\.)*"'), '"isolation": "-"'),
    (re.compile(r'(<testsuite [^>]*) time="[0-9.]+"'), r'\1 time="0"'),
    # a call's time limit is calibrated on the machine (at least 0.5 s): a timeout's message names it
    (re.compile(r'"limit": "[0-9.]+"'), '"limit": "-"'),
    (re.compile(r"within [0-9.]+ s\b"), "within - s"),
)


@pytest.fixture(autouse=True)
def course_key(monkeypatch):
    monkeypatch.setenv("MHA_COURSE_KEY", KEY)


def masked(text: str) -> str:
    """``text`` with what differs between machines and runs replaced by placeholders, the rest untouched."""
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text


def kept_files(out: Path) -> dict[str, str]:
    """The compared files of an output folder, by their name among the fixtures, masked."""
    names = {"results.json": out / "results.json", "grades.csv": out / "grades.csv", "junit.xml": out / "junit.xml"}
    names |= {f"gradescope-{student}.json": out / "gradescope" / student / "results.json"
              for student in GRADESCOPE_STUDENTS}
    return {name: masked(path.read_text(encoding="utf-8")) for name, path in names.items()}


def grade(*args) -> None:
    options = ["--jobs", "2", "--adjust", str(FIXTURES / "adjustments.csv"),
               "--format", "junit", "--format", "gradescope"]
    result = CliRunner().invoke(root, ["grade", *map(str, args), *options])
    assert result.exit_code == 0, result.output


def first_difference(kept: str, text: str) -> str:
    """Where two results.json texts first differ: the student, the check and the field, or the bytes."""
    try:
        pairs = list(zip(json.loads(kept), json.loads(text), strict=True))
    except (ValueError, TypeError):
        return "not the same list of results"
    for old, new in pairs:
        for key in old.keys() | new.keys():
            if key == "tests" and old.get(key) != new.get(key):
                for check, got in zip(old[key], new[key]):
                    changed = {field: (value, got.get(field)) for field, value in check.items()
                               if value != got.get(field)}
                    if changed:
                        return f"{old['student']}, {check['name']}: {changed}"
            if old.get(key) != new.get(key):
                return f"{old['student']}, {key}: expected {old.get(key)!r}, got {new.get(key)!r}"
    index = next(i for i, (a, b) in enumerate(zip(kept, text)) if a != b) if kept != text else 0
    return f"the same values in other bytes, from {kept[index - 80:index + 80]!r}"


def assert_same_as_kept(out: Path) -> None:
    for name, text in kept_files(out).items():
        kept = (FIXTURES / name).read_text(encoding="utf-8")
        where = first_difference(kept, text) if name == "results.json" and text != kept else ""
        assert text == kept, f"{name} differs from the kept tests/fixtures/results_contract/{name}: {where}"


def test_a_graded_class_writes_the_kept_results_json_and_renderings(tmp_path):
    grade(DEMO, "--out", tmp_path / "out")
    assert_same_as_kept(tmp_path / "out")


def test_shards_merged_write_the_same_bytes(tmp_path):
    for index in (1, 2):
        grade(DEMO, "--out", tmp_path / f"part{index}", "--shard", f"{index}/2")
    merged = CliRunner().invoke(root, ["merge", str(tmp_path / "part1"), str(tmp_path / "part2"), "--out",
                                       str(tmp_path / "merged"), "--format", "junit", "--format", "gradescope"])
    assert merged.exit_code == 0, merged.output
    texts = kept_files(tmp_path / "merged")
    # a merge keeps the adjustments the shards applied; its junit suite is named after the merge
    assert texts.pop("results.json") == (FIXTURES / "results.json").read_text(encoding="utf-8")
    assert texts.pop("grades.csv") == (FIXTURES / "grades.csv").read_text(encoding="utf-8")
    for name, text in texts.items():
        if name.startswith("gradescope-"):
            assert text == (FIXTURES / name).read_text(encoding="utf-8"), name


def test_masking_hides_only_what_machines_change():
    text = '{"duration": 0.122, "isolation": "landlock \\"7\\"", "score": 0.122, "message": "not within 0.5 s"}'
    assert masked(text) == '{"duration": 0, "isolation": "-", "score": 0.122, "message": "not within - s"}'


if __name__ == "__main__":  # write the fixtures again from an output folder
    for name, text in kept_files(Path(sys.argv[1])).items():
        (FIXTURES / name).write_text(text, encoding="utf-8")
