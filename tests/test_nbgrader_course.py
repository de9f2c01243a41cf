"""The nbgrader course of `mha release --nbgrader`, and mha grade scores in nbgrader's gradebook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROJECT
from grader.authoring.nbgrader_bridge import check_groups, write_to_gradebook
from grader.authoring.release import build_nbgrader_course
from grader.errors import ConfigError, UsageError
from grader.grading.grade import grade_submission
from grader.stubs import strip_markers

ASSIGNMENT = "multihead_attention"
SOLUTION = PROJECT / "solutions" / f"{ASSIGNMENT}.py"
CORRECT_SPLIT = ("x = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, T, H, d_k)\n"
                 "        return x.transpose(0, 2, 1, 3)  # (B, H, T, d_k)")
BUGGY_SPLIT = "return x.reshape(batch, self.num_heads, length, self.d_k)"


def nbgrader(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def gradebook_scores(db: Path, students) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gradebook:
        return {student: gradebook.find_submission(ASSIGNMENT, student).score for student in students}


def cell_scores(db: Path, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gradebook:
        submission = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        return {grade.name: grade.score for grade in submission.grades}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("course")
    build_nbgrader_course(course_dir=folder, assignment=ASSIGNMENT)
    return folder


# ---- the course as written ------------------------------------------------------------------
def test_course_notebook_has_solution_cells_and_test_cells_worth_every_point(course):
    import nbformat
    from nbgrader.nbgraderformat import MetadataValidator

    notebook = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    MetadataValidator().validate_nb(notebook)  # what nbgrader itself checks
    tests = [cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")]
    solutions = [cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("solution")]
    assert len(solutions) == 5 and all("### BEGIN SOLUTION" in cell.source for cell in solutions)
    graded = {cell.metadata.nbgrader.grade_id: cell.metadata.nbgrader.points for cell in tests}
    full = grade_submission(path=SOLUTION, visibility="all", seed=3)
    assert sum(graded.values()) == full.max_score
    for name, functions in check_groups(ASSIGNMENT).items():
        assert graded[name] == sum(t.max_score for t in full.tests if t.function in functions)
        cell = next(cell for cell in tests if cell.metadata.nbgrader.grade_id == name)
        hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
        assert 'visibility = "all"' in hidden
        assert all(f'"{function}"' in cell.source for function in functions)
    config = (course / "nbgrader_config.py").read_text(encoding="utf-8")
    assert 'c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}' in config
    assert "nbgrader generate_assignment multihead_attention" in (course / "README.md").read_text(encoding="utf-8")


def test_course_is_not_overwritten_without_force(course):
    with pytest.raises(UsageError, match="--force"):
        build_nbgrader_course(course_dir=course, assignment=ASSIGNMENT)


def test_chinese_course_notebook(tmp_path):
    build_nbgrader_course(course_dir=tmp_path, assignment=ASSIGNMENT, lang="zh")
    text = (tmp_path / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text(encoding="utf-8")
    assert "用 NumPy 实现多头注意力" in text and 'lang=\\"zh\\"' in text
    assert "nbgrader 课程" in (tmp_path / "README.md").read_text(encoding="utf-8")


# ---- scores into a gradebook ----------------------------------------------------------------
@pytest.fixture(scope="module")
def results() -> dict[str, object]:
    stub = PROJECT / "exercises" / f"{ASSIGNMENT}.py"
    return {"ada": grade_submission(path=SOLUTION, visibility="all", student="ada"),
            "ben": grade_submission(path=stub, visibility="all", student="ben")}


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory):
    """Copies of one empty gradebook (making one costs about a second)."""
    from nbgrader.api import Gradebook

    template = tmp_path_factory.mktemp("gradebook") / "empty.db"
    with Gradebook(f"sqlite:///{template}"):
        pass

    def copy(path: Path) -> Path:
        return Path(shutil.copy(template, path))

    return copy


def test_scores_go_into_a_new_gradebook_cell_by_cell(tmp_path, results, empty_gradebook):
    db = empty_gradebook(tmp_path / "gradebook.db")
    not_added = write_to_gradebook(db=db, assignment=ASSIGNMENT, results=list(results.values()))
    assert not_added.students == () and not_added.skipped == ("ada", "ben")  # nobody on the roster yet
    written = write_to_gradebook(db=db, assignment=ASSIGNMENT, results=list(results.values()), add_students=True)
    assert written.students == written.added == ("ada", "ben")
    assert gradebook_scores(db, results) == {"ada": results["ada"].score, "ben": 0.0}
    assert results["ada"].score > 0
    cells = cell_scores(db, "ada")
    for name, functions in check_groups(ASSIGNMENT).items():
        assert cells[name] == sum(t.score for t in results["ada"].tests if t.function in functions)
    # grading again overwrites; it does not add up
    write_to_gradebook(db=db, assignment=ASSIGNMENT, results=[results["ben"]])
    assert gradebook_scores(db, ["ada", "ben"])["ada"] == results["ada"].score


def test_gradebook_with_other_cells_or_public_only_results_is_refused(tmp_path, results, empty_gradebook):
    from nbgrader.api import Gradebook

    with pytest.raises(ConfigError, match="no such file"):
        write_to_gradebook(db=tmp_path / "missing.db", assignment=ASSIGNMENT, results=[])
    db = empty_gradebook(tmp_path / "other.db")
    with Gradebook(f"sqlite:///{db}") as gradebook:
        gradebook.add_assignment(ASSIGNMENT)
        gradebook.add_notebook(ASSIGNMENT, ASSIGNMENT)
        gradebook.add_grade_cell("question-1", ASSIGNMENT, ASSIGNMENT, max_score=5, cell_type="code")
    with pytest.raises(ConfigError, match="question-1"):
        write_to_gradebook(db=db, assignment=ASSIGNMENT, results=[results["ada"]])
    fresh = empty_gradebook(tmp_path / "fresh.db")
    public = grade_submission(path=SOLUTION, visibility="public", student="ada")
    with pytest.raises(ConfigError, match="--visibility all"):
        write_to_gradebook(db=fresh, assignment=ASSIGNMENT, results=[public])


def test_mha_grade_writes_into_the_gradebook(tmp_path, results, empty_gradebook):
    from click.testing import CliRunner
    from nbgrader.api import Gradebook

    from grader.cli import root

    submissions = tmp_path / "submissions"
    submissions.mkdir()
    shutil.copy(SOLUTION, submissions / "ada.py")
    shutil.copy(PROJECT / "exercises" / f"{ASSIGNMENT}.py", submissions / "ben.py")
    db = empty_gradebook(tmp_path / "gradebook.db")
    with Gradebook(f"sqlite:///{db}") as gradebook:
        gradebook.add_student("ada")  # ben is not on the roster
    done = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / "out"), "--jobs", "1",
                                     "--nbgrader-db", str(db)])
    assert done.exit_code == 0, done.output
    assert "Wrote 1 score into" in done.output and "not on the gradebook's roster" in done.output and "ben" in done.output
    with Gradebook(f"sqlite:///{db}") as gradebook:
        assert [student.id for student in gradebook.students] == ["ada"]
    done = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / "out"), "--jobs", "1",
                                     "--nbgrader-db", str(db), "--add-students", "--overwrite"])
    assert done.exit_code == 0, done.output
    assert "Wrote 2 scores" in done.output and "added 1 student to its roster" in done.output
    assert gradebook_scores(db, ["ada", "ben"]) == {"ada": results["ada"].score, "ben": 0.0}
    public = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / "out2"),
                                       "--visibility", "public", "--nbgrader-db", str(db)])
    assert public.exit_code == 2 and "--visibility all" in public.output
    assert not (tmp_path / "out2").exists()  # refused before grading anything


def test_grade_help_mentions_the_gradebook_option():
    from click.testing import CliRunner

    from grader.cli import root

    done = CliRunner().invoke(root, ["grade", "--help"])
    assert done.exit_code == 0 and "--nbgrader-db" in done.output


# ---- the real nbgrader workflow --------------------------------------------------------------
def submit(course: Path, student: str, edit=None, fill: bool = True) -> Path:
    """Fill the released notebook's answer cells with the reference (optionally edited) and submit it."""
    source = json.loads((course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text(encoding="utf-8"))
    notebook = json.loads((course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text(encoding="utf-8"))
    answers = {cell["id"]: strip_markers("".join(cell["source"])) for cell in source["cells"]
               if cell["metadata"].get("nbgrader", {}).get("solution")}
    for cell in notebook["cells"]:
        if fill and cell["id"] in answers:
            cell["source"] = edit(answers[cell["id"]]) if edit else answers[cell["id"]]
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    path = folder / f"{ASSIGNMENT}.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


@pytest.mark.slow
def test_nbgrader_workflow_gives_the_same_scores_as_mha(tmp_path):
    course = tmp_path / "course"
    build_nbgrader_course(course_dir=course, assignment=ASSIGNMENT)
    nbgrader("generate_assignment", ASSIGNMENT, cwd=course)
    released = (course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text(encoding="utf-8")
    assert "HIDDEN TESTS" not in released and 'visibility = \\"all\\"' not in released
    assert "np.swapaxes(K, -1, -2) / np.sqrt(d_k)" not in released.split("# Hint")[0]
    submissions = {
        "alice": submit(course, "alice"),
        "bob": submit(course, "bob", fill=False),
        "carol": submit(course, "carol", edit=lambda code: code.replace(CORRECT_SPLIT, BUGGY_SPLIT)),
    }
    nbgrader("autograde", ASSIGNMENT, cwd=course)
    nbgrader("generate_feedback", ASSIGNMENT, cwd=course)

    ours = {student: grade_submission(path=path, visibility="all", student=student)
            for student, path in submissions.items()}
    assert ours["alice"].score == ours["alice"].max_score
    assert ours["bob"].score == 0
    assert 0 < ours["carol"].score < ours["carol"].max_score
    assert ours["carol"].misconceptions == ("split-heads-no-transpose",)
    db = course / "gradebook.db"
    assert gradebook_scores(db, ours) == {student: result.score for student, result in ours.items()}
    for name, functions in check_groups(ASSIGNMENT).items():
        assert cell_scores(db, "carol")[name] == sum(t.score for t in ours["carol"].tests if t.function in functions)
    autograded = (course / "autograded" / "carol" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text(encoding="utf-8")
    assert "drawn for carol alone" in autograded  # hidden inputs came from carol's own seed
    for student in submissions:
        feedback = course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        assert feedback.is_file()
    assert "split-heads-no-transpose" in (course / "feedback" / "carol" / ASSIGNMENT
                                          / f"{ASSIGNMENT}.html").read_text(encoding="utf-8")
    assert_check_table_reads_as_large_as_the_page(course / "feedback" / "carol" / ASSIGNMENT / f"{ASSIGNMENT}.html",
                                                  tmp_path / "profile")

    # `mha grade` on the same submissions folder gives the gradebook's scores
    graded = subprocess.run(["mha", "grade", str(course / "submitted"), "--out", str(tmp_path / "mha"),
                             "--assignment", ASSIGNMENT], capture_output=True, text=True)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    by_mha = {entry["student"]: entry["score"]
              for entry in json.loads((tmp_path / "mha" / "results.json").read_text(encoding="utf-8"))}
    assert by_mha == gradebook_scores(db, submissions)

    # mha's own scores written into a copy of the same gradebook agree with nbgrader's
    copy = shutil.copy(db, tmp_path / "copy.db")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    buggy = scripts / "carol.py"
    buggy.write_text(SOLUTION.read_text(encoding="utf-8").replace(CORRECT_SPLIT, BUGGY_SPLIT), encoding="utf-8")
    from_script = grade_submission(path=buggy, visibility="all", student="carol")
    write_to_gradebook(db=Path(copy), assignment=ASSIGNMENT, results=[from_script], add_students=True)
    assert gradebook_scores(Path(copy), ["carol"]) == {"carol": ours["carol"].score}


def assert_check_table_reads_as_large_as_the_page(page: Path, profile: Path) -> None:
    """In nbgrader's feedback page, mha's check table is set no smaller than the page's own text and code."""
    from chromium_driver import Chromium, find_chromium

    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (Debian: apt install chromium fonts-noto-cjk)")
        return  # the scores above are still held; CI measures the page
    browser = Chromium(binary, profile)
    try:
        browser.open(page.resolve().as_uri())
        size = "(s => parseFloat(getComputedStyle(document.querySelector(s)).fontSize))"
        table, text, code = (browser.evaluate(f"{size}({selector!r})")
                             for selector in (".mha-check td", "body", "div.output_area pre, pre"))
        assert table >= 0.95 * min(text, code) and table >= 13, (table, text, code)
    finally:
        browser.close()
