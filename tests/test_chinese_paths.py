"""Every student's path in Chinese, through the installed ``mha``: no English prose outside code names.

For each of the exercises: ``mha check --lang zh`` on its stub, its reference and one of its mistakes; then
the quiz (a typed session, ``--stats``, ``--list``) and a drill with ``--lang zh``.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

from conftest import PROJECT
from language_scan import english_prose
from test_usage_language import run

EXERCISES = sorted(folder.name for folder in (PROJECT / "grader" / "assignments").iterdir()
                   if (folder / "exercise.toml").is_file())


def _mistake(exercise: str):
    mistakes = sorted((PROJECT / "grader" / "assignments" / exercise / "mutants" / "mistakes").glob("*.py"))
    return mistakes[len(mistakes) // 2] if mistakes else None


def _checked(tmp_path, exercise: str, source) -> tuple[int, str]:
    target = tmp_path / f"{exercise}.py"
    shutil.copy(source, target)
    os.environ["COLUMNS"] = "400"  # one line per sentence: the scan reads a command as one piece
    try:
        done = run("check", target, "--assignment", exercise, "--lang", "zh", cwd=tmp_path)
    finally:
        del os.environ["COLUMNS"]
    return done.returncode, done.stdout + done.stderr


def test_every_exercise_is_found():
    assert len(EXERCISES) >= 12, EXERCISES


@pytest.mark.parametrize("exercise", EXERCISES)
@pytest.mark.parametrize("kind", ["stub", "reference", "mistake"])
def test_a_check_in_chinese_holds_no_english_prose(exercise, kind, tmp_path):
    source = {"stub": PROJECT / "exercises" / f"{exercise}.py", "reference": PROJECT / "solutions" / f"{exercise}.py",
              "mistake": _mistake(exercise)}[kind]
    if source is None:
        pytest.skip(f"{exercise} has no mutant library")
    status, said = _checked(tmp_path, exercise, source)
    assert status == (0 if kind == "reference" else 1), said
    assert english_prose(said, allowed={str(tmp_path), exercise}) == [], said


@pytest.fixture
def data_dir(tmp_path):
    before = os.environ.get("MHA_DATA_DIR")
    os.environ["MHA_DATA_DIR"] = str(tmp_path / "data")
    yield tmp_path / "data"
    if before is None:
        del os.environ["MHA_DATA_DIR"]
    else:
        os.environ["MHA_DATA_DIR"] = before


def test_a_typed_quiz_and_its_statistics_are_chinese(data_dir, tmp_path):
    import subprocess

    from test_usage_language import mha

    env = {name: value for name, value in os.environ.items() if name not in ("LC_ALL", "LC_MESSAGES", "LANGUAGE")}
    env["LANG"] = "C.UTF-8"
    session = subprocess.run([mha(), "quiz", "--lang", "zh", "--plain", "--count", "4", "--seed", "5"],
                             input="1\nA\n1\nB\n", capture_output=True, text=True, env=env, timeout=180, cwd=tmp_path)
    assert session.returncode == 0, session.stderr
    assert re.search(r"你的答案（[^\n]*）：", session.stdout), session.stdout  # the prompt ends in a Chinese colon
    assert ": " not in "".join(re.findall(r"你的答案（[^\n]*）.", session.stdout)), session.stdout
    stats = run("quiz", "--stats", "--lang", "zh", cwd=tmp_path)
    assert stats.returncode == 0 and "答对" in stats.stdout, stats.stdout
    for said in (session.stdout, stats.stdout):
        assert english_prose(said, allowed={str(data_dir), str(tmp_path)}) == [], said


def test_the_bank_listing_names_levels_and_kinds_in_chinese():
    from grader.practice.bank import default_bank

    bank = default_bank()
    listing = run("quiz", "--list", "--lang", "zh").stdout.splitlines()
    rows = [line.split(maxsplit=2) for line in listing[:-1]]
    assert {row[0] for row in rows} == {question.id for question in bank.questions}
    rest = "\n".join(row[2] for row in rows)  # what follows the id and the topic's id
    assert english_prose(rest.replace("en+zh", " ")) == [], rest[:2000]
    assert listing[-1].startswith(f"共 {len(rows)} 道题"), listing[-1]
    english = run("quiz", "--list", "--lang", "en").stdout.splitlines()
    assert english[-1].startswith(f"{len(rows)} questions"), english[-1]


def test_a_drill_in_chinese_holds_no_english_prose(data_dir, tmp_path):
    said = []
    os.environ["COLUMNS"] = "400"
    for args in (("drill", "softmax"), ("drill", "--status"), ("drill", "--submit"), ("drill", "--history")):
        done = run(*args, "--lang", "zh", cwd=tmp_path)
        assert done.returncode in (0, 1), done.stderr
        said.append(done.stdout + done.stderr)
    del os.environ["COLUMNS"]
    text = "\n".join(said)
    assert "softmax" in text and english_prose(text, allowed={str(tmp_path), str(data_dir)}) == [], text
