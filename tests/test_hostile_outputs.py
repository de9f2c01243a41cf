"""A class with every attack on the batch and its outputs, graded through the real `mha grade`.

Honest copies of the reference sit beside submissions whose *names* attack
(formulas for the spreadsheet, terminal escapes, undecodable bytes, newlines,
look-alike names), whose *messages* attack (``tests/fixtures/hostile_outputs``:
escape sequences, Markdown and HTML, lone surrogates), whose *files* are hard
links to a secret the grader can read, whose folder nests 1,100 levels deep,
and whose quiz answers file forges its header. The batch must finish with one
row per entry, honest work at full marks, every attack at its honest score,
and no output holding the secret, an escape byte, a live formula, link or tag.
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, PROJECT
from grader.cli import root
from grader.practice.answers import expected_text
from grader.practice.sheets import make_sheet
from grader.render.class_report import ROSTER_SCRIPT
from grader.render.text_safety import clean_name

SECRET = "COURSE-KEY-7f3a9c-do-not-leak"
ATTACKS = FIXTURES / "hostile_outputs"
REFERENCE = (PROJECT / "solutions" / "multihead_attention.py").read_text(encoding="utf-8")
QUIZ_COUNT = 3
DEPTH = 1100
FORMULAS = ('=HYPERLINK("evil.example","open")', "+1+1", "-2+3", "@SUM(1+1)")
ESCAPE_NAME = "\x1b[2J\x1b[1;32mALL PASSED\x1b[0m"
PLAIN_MESSAGE = 'MESSAGE = "a plain message"\n'


def with_attack(name: str) -> str:
    return REFERENCE + "\n\n" + (ATTACKS / f"{name}.py").read_text(encoding="utf-8")


def without_attack(name: str) -> str:
    snippet = re.sub(r"# BEGIN ATTACK.*?# END ATTACK\n", PLAIN_MESSAGE, (ATTACKS / f"{name}.py").read_text(),
                     flags=re.S)
    return REFERENCE + "\n\n" + snippet


def notebook(source: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "%ls \ud800 \x1b[2J\n!echo \udcff\n" + source}]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def answers_file(student: str, *, right: int | None = None, header: str = "") -> str:
    sheet = make_sheet(student=student, count=QUIZ_COUNT)
    given = [expected_text(posed, "en") for posed in sheet.questions]
    if right is not None:
        given = given[:right] + ["surely not this"] * (len(given) - right)
    lines = ["schema_version = 1", header, "[answers]"]
    lines += [f"{json.dumps(posed.id)} = {json.dumps(text)}" for posed, text in zip(sheet.questions, given)]
    return "\n".join(lines) + "\n"


def deep_folder(root: Path, depth: int) -> Path:
    """``root/d/d/.../d/multihead_attention.py``, made one level at a time (``mkdir -p`` would recurse)."""
    here = str(root)
    os.mkdir(here)
    for _ in range(depth):
        here = os.path.join(here, "d")
        os.mkdir(here)
    Path(here, "multihead_attention.py").write_text(REFERENCE, encoding="utf-8")
    return root


def remove_tree(root: Path) -> None:
    """Remove a folder however deep, without recursion (shutil.rmtree, which pytest uses, would fail)."""
    if not os.path.lexists(root):
        return
    pending, folders = [str(root)], []
    while pending:
        folder = pending.pop()
        folders.append(folder)
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    os.unlink(entry.path)
    for folder in reversed(folders):
        os.rmdir(folder)


@pytest.fixture
def hostile_class(tmp_path, monkeypatch, request):
    request.addfinalizer(lambda: remove_tree(tmp_path / "class" / "deep"))  # before it exists, so always
    monkeypatch.setenv("MHA_COURSE_KEY", SECRET)
    secret = tmp_path / "course_key.txt"  # a file the grader can read and the students cannot
    secret.write_text(f"key = {SECRET}\n", encoding="utf-8")
    folder = tmp_path / "class"
    folder.mkdir()
    entries: dict[str, str] = {}  # what each entry is, by its name on disk

    def add(name: str | bytes, text: str, kind: str) -> None:
        path = os.path.join(os.fsencode(folder), os.fsencode(name))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        entries[os.fsdecode(os.path.basename(path))] = kind

    for student in ("ann", "bob"):  # honest, with a right quiz
        add(f"{student}.py", REFERENCE, "honest")
        (folder / f"{student}.answers.toml").write_text(answers_file(student), encoding="utf-8")
    add("nora.ipynb", notebook(REFERENCE), "honest-code")  # skipped magics hold surrogates and escapes
    for name in FORMULAS + (ESCAPE_NAME, "new\nline", "tab\tname", "Zoë Müller", "a..b", "mary@uni.edu"):
        add(f"{name}.py", REFERENCE, "honest-code")
    add(b"jos\xe9.py", REFERENCE, "honest-code")  # not UTF-8: shown as jos\ufffd
    add("jos\ufffd.py", REFERENCE, "honest-code")  # ... and so equal to this one once shown
    add("Zoe\u0308 Mu\u0308ller.ipynb", notebook(REFERENCE), "honest-code")  # NFD: equal to "Zoë Müller" in NFC
    for attack in sorted(path.stem for path in ATTACKS.glob("*.py")):
        add(f"{attack}.py", with_attack(attack), f"attack:{attack}")
        add(f"control_{attack}.py", without_attack(attack), "control")
    os.link(secret, folder / "eve.py")
    os.link(secret, folder / "trent.ipynb")
    entries.update({"eve.py": "hard-link", "trent.ipynb": "hard-link"})
    (folder / "mallory").mkdir()
    os.link(secret, folder / "mallory" / "multihead_attention.py")
    (folder / "mallory" / "notes.txt").write_text("notes", encoding="utf-8")
    entries["mallory"] = "hard-link"
    add("quinn.py", REFERENCE, "quiz-forger")
    (folder / "quinn.answers.toml").write_text(answers_file("quinn", right=1, header='count = 0\nlevels = ["basic"]'),
                                               encoding="utf-8")
    deep_folder(folder / "deep", DEPTH)
    entries["deep"] = "too-deep"
    for name in ("__pycache__", ".ipynb_checkpoints"):  # not students
        (folder / name).mkdir()
        (folder / name / "multihead_attention.py").write_text(REFERENCE, encoding="utf-8")
    (folder / ".hidden.py").write_text(REFERENCE, encoding="utf-8")
    (folder / "ann.py~").write_text(REFERENCE, encoding="utf-8")
    return folder, entries


def read_results(out: Path) -> dict[str, dict]:
    return {result["student"]: result for result in json.loads((out / "results.json").read_text(encoding="utf-8"))}


def code_part(result: dict) -> tuple[float, float]:
    tests = [test for test in result["tests"] if test["function"] != "quiz"]
    return sum(test["score"] for test in tests), sum(test["max_score"] for test in tests)


@pytest.mark.slow
def test_a_hostile_class_finishes_honestly_with_clean_outputs(hostile_class, tmp_path):
    folder, entries = hostile_class
    out = tmp_path / "out"
    done = CliRunner().invoke(root, ["grade", str(folder), "--out", str(out), "--jobs", "2", "--quiz-count",
                                     str(QUIZ_COUNT), "--format", "gradescope", "--format", "junit"])
    assert done.exit_code == 0, done.output
    results = read_results(out)

    # one row per entry, every id distinct, every result saying which file it graded
    assert len(results) == len(entries), sorted(results)
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8", newline="")))
    assert len(rows) == len(entries) == len({row["student"] for row in rows})
    assert all(result["submission"] for result in results.values())
    full = results["ann"]["max_score"]

    def result_of(entry: str) -> dict:
        shown = clean_name(entry)
        matches = [result for result in results.values() if result["submission"].split("/")[0] == shown]
        assert matches, entry
        return matches[0]  # look-alike names share how they are shown, and their code

    for entry, kind in entries.items():
        if kind in ("honest", "honest-code", "quiz-forger", "control") or kind.startswith("attack:"):
            assert result_of(entry)["status"] == "graded", (entry, result_of(entry)["error"])
        if kind == "honest":
            assert result_of(entry)["score"] == full, entry
        if kind == "honest-code":
            score, maximum = code_part(result_of(entry))
            assert score == maximum and result_of(entry)["max_score"] == full, entry
        if kind.startswith("attack:"):
            name = kind.split(":")[1]
            assert result_of(entry)["score"] == result_of(f"control_{name}.py")["score"], name
            assert 0 < code_part(result_of(entry))[0] < code_part(result_of(entry))[1]
        if kind == "hard-link":
            assert result_of(entry)["status"] == "error" and "hard link" in result_of(entry)["error"], entry
            assert result_of(entry)["score"] == 0.0 and result_of(entry)["max_score"] == full
        if kind == "too-deep":
            assert result_of(entry)["status"] == "error" and "levels deep" in result_of(entry)["error"]

    # look-alike names are told apart, and both feedbacks say so
    look_alike = [result for result in results.values() if result["student"].startswith("jos\ufffd")]
    assert len(look_alike) == 2 and all("~" in result["student"] for result in look_alike)
    assert all(any("look the same" in note for note in result["notes"]) for result in look_alike)
    zoe = [result for result in results.values() if result["student"].startswith("Zoë Müller")]
    assert len(zoe) == 2 and len({result["student"] for result in zoe}) == 2

    # the forged quiz header changed nothing: the instructor's sheet of 3, one right
    quinn = results["quinn"]
    quiz = [test for test in quinn["tests"] if test["function"] == "quiz"]
    assert len(quiz) == QUIZ_COUNT and sum(test["score"] for test in quiz) == 1.0 and quinn["max_score"] == full
    hidden_answers = [expected_text(posed, "en") for posed in make_sheet(student="quinn", count=QUIZ_COUNT).questions]
    quinn_page = (out / "feedback" / "quinn.md").read_text(encoding="utf-8")
    assert not [text for text in hidden_answers[1:] if f"expected {text}" in quinn_page]

    # the outputs: no secret, no escape or control byte, no formula, no live link, image or tag
    files = [path for path in out.rglob("*") if path.is_file()]
    assert len(files) > 2 * len(entries)
    for path in files:
        data = path.read_bytes()
        assert SECRET.encode() not in data and b"key = " not in data, path
        if path.suffix in (".csv", ".json", ".md", ".html", ".xml"):
            text = data.decode("utf-8")  # strict: no lone surrogate was written
            assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), (path, re.findall("[\x00-\x1f]", text)[:3])
        if path.suffix == ".md":
            assert "](http" not in text and "![" not in text and "<script" not in text and "<img" not in text, path
        if path.suffix == ".html":
            # the class report's one script (sorting and searching the roster) is the grader's own, at the end
            scripts = text.count("<script")
            assert scripts == 0 or (path.name == "report.html" and scripts == 1
                                    and text.endswith(f"<script>{ROSTER_SCRIPT}</script></body></html>\n")), path
            assert all('src="data:image/png' in tag for tag in re.findall(r"<img[^>]*>", text)), path
    for row in csv.reader((out / "grades.csv").open(encoding="utf-8", newline="")):
        assert not [cell for cell in row if cell.lstrip().startswith(("=", "+", "-", "@"))], row
    for path in (out / "gradescope").rglob("results.json"):
        tests = json.loads(path.read_text())["tests"]
        assert {test.get("output_format") for test in tests} == {"md"}  # the one renderer escapes its Markdown
        for test in tests:
            shown = test.get("output", "") + test.get("name", "")
            assert "](http" not in shown and "![" not in shown and "<script" not in shown and "<img" not in shown
    assert "\x1b" not in done.output and SECRET not in done.output


@pytest.mark.slow
def test_mha_check_prints_no_escape_and_no_fake_line(tmp_path):
    path = tmp_path / f"eve{ESCAPE_NAME}.py"
    path.write_text(with_attack("escape_sequences"), encoding="utf-8")
    done = CliRunner().invoke(root, ["check", str(path)])
    assert done.exit_code == 1
    assert "\x1b" not in done.output and "\x9b" not in done.output and "\r" not in done.output
    assert not [line for line in done.output.splitlines() if line.startswith("All 26 checks passed")]


@pytest.mark.parametrize("attack", sorted(path.stem for path in ATTACKS.glob("*.py")))
def test_mha_check_json_carries_each_attack_as_clean_json(tmp_path, attack):
    path = tmp_path / f"{attack}.py"
    path.write_text(with_attack(attack), encoding="utf-8")
    done = CliRunner().invoke(root, ["check", str(path), "--json"])
    assert done.exit_code == 1, done.output  # checks failed; the command itself did not
    result = json.loads(done.output)
    strings = []

    def collect(value) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(result)
    assert not [text for text in strings if re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]", text)]
    assert any("softmax raised ValueError" in text for text in strings)
