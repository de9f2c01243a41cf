"""`mha release --student`: what a student gets, installed in a fresh virtual environment."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import PROJECT
from grader.authoring.release import build_student_release, instructor_only
from grader.cli import root

ASSIGNMENT = "multihead_attention"


def code_part(line: str) -> str:
    """A line without indentation, trailing comment or repeated spaces ('' for a comment line)."""
    line = line.strip()
    if line.startswith("#"):
        return ""
    return re.sub(r"\s+", " ", re.sub(r"\s+#.*$", "", line))


def solution_blocks() -> list[list[str]]:
    """The code lines of every solution block of solutions/*.py, block by block."""
    blocks = []
    for path in sorted((PROJECT / "solutions").glob("*.py")):
        block = None
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() == "### BEGIN SOLUTION":
                block = []
            elif line.strip() == "### END SOLUTION":
                blocks.append(block)
                block = None
            elif block is not None and code_part(line):
                block.append(code_part(line))
    return blocks


def telling(line: str) -> bool:
    """A line that gives part of an answer away (not `return out` or `else:`)."""
    return len(line) >= 16 and not re.fullmatch(r"(return|raise|else:|if .*:)\s*[\w, .()]*", line)


def hidden_lines() -> set[str]:
    """Lines of the hidden suites that nothing public (public suites, stubs, content) also holds."""
    exercises = PROJECT / "grader" / "assignments"
    public_files = [*exercises.glob("*/public/*.py"), *(PROJECT / "exercises").glob("*.py"),
                    *(PROJECT / "grader" / "content").rglob("*.toml"), *exercises.glob("*/*.toml"),
                    *exercises.glob("*/tutorial/*.toml")]
    public = " ".join(re.sub(r"\s+", " ", path.read_text(encoding="utf-8")) for path in public_files)
    found = set()
    for path in exercises.glob("*/hidden/*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            code = code_part(line)
            if len(code) >= 20 and code not in public and not code.startswith(("import ", "from ")):
                found.add(code)
    return found


def code_lines(path: Path) -> list[str]:
    """The code of a Python file or of a notebook's code cells, line by line (comments dropped)."""
    if path.suffix == ".ipynb":
        notebook = json.loads(path.read_text(encoding="utf-8"))
        text = "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code")
    else:
        text = path.read_text(encoding="utf-8")
    return [code for code in map(code_part, text.splitlines()) if code]


def holds_body(lines: list[str], block: list[str]) -> bool:
    """True when the telling lines of ``block`` appear in order within one stretch of ``lines``."""
    wanted = [line for line in block if telling(line)]
    if len(wanted) < 2:
        return False
    span = len(block) + 3
    for start, line in enumerate(lines):
        if line != wanted[0]:
            continue
        position = start
        for item in wanted[1:]:
            try:
                position = lines.index(item, position + 1, start + span)
            except ValueError:
                break
        else:
            return True
    return False


def leaks(folder: Path) -> list[str]:
    """Solution code or hidden-test code anywhere in ``folder``.

    Python files and notebook code may hold no telling line of a solution
    block. Text (catalog hints, spot-the-bug quiz snippets) quotes solution
    lines on purpose, but never a whole solution body. Hidden-test lines that
    nothing public holds may appear nowhere.
    """
    blocks = solution_blocks()
    single = {line for block in blocks for line in block if telling(line)}
    secret = hidden_lines()
    found = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix in (".npz", ".zip", ".png", ".pyc"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        flat = re.sub(r"\s+", " ", text)
        found += [f"{path}: hidden-test line {line!r}" for line in secret if line in flat]
        if path.suffix in (".py", ".ipynb"):
            found += [f"{path}: solution line {line!r}" for line in code_lines(path) if line in single]
        lines = [line for line in map(code_part, text.splitlines()) if line]
        found += [f"{path}: solution body {block[:2]!r}..." for block in blocks if holds_body(lines, block)]
    return found


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("release") / "mha-student"
    build_student_release(target=folder, assignment=ASSIGNMENT)
    return folder


def test_the_scan_finds_solution_and_hidden_code(tmp_path):
    """The leak scan itself can fail: planted solution and hidden lines are reported."""
    (tmp_path / "copied.py").write_text((PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8"))
    hidden = next((PROJECT / "grader" / "assignments" / ASSIGNMENT / "hidden").glob("test_*.py"))
    (tmp_path / "notes.md").write_text(hidden.read_text(encoding="utf-8"))
    body = "\n".join(line for line in (PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text().splitlines()
                     if "HINT" not in line)
    (tmp_path / "quiz.toml").write_text(f'code = """\n{body}\n"""\n')
    found = leaks(tmp_path)
    assert any("copied.py: solution line" in item for item in found)
    assert any("notes.md: hidden-test line" in item for item in found)
    assert any("quiz.toml: solution body" in item for item in found)
    assert not leaks(PROJECT / "grader" / "content")  # quoting single lines, as hints do, is fine
    for folder in (PROJECT / "grader" / "assignments").glob("*/"):
        assert not [found for name in ("checks.toml", "misconceptions.toml", "tutorial", "exercise.toml")
                    if (folder / name).exists() for found in leaks(folder / name)]


def test_release_holds_no_solution_or_hidden_test_code(release):
    assert leaks(release) == []


def test_release_holds_what_a_student_needs_and_nothing_of_the_instructor(release):
    files = {path.relative_to(release).as_posix() for path in release.rglob("*") if path.is_file()}
    assert {"README.md", "pyproject.toml", f"exercises/{ASSIGNMENT}.py", f"exercises/notebooks/{ASSIGNMENT}.ipynb",
            f"exercises/notebooks/{ASSIGNMENT}.zh.ipynb", f"grader/assignments/{ASSIGNMENT}/public_cases.npz",
            f"grader/assignments/{ASSIGNMENT}/exercise.toml", f"grader/assignments/{ASSIGNMENT}/checks.toml",
            "grader/verbs/check.py", "grader/cli.py", "grader/grading/reference.py", "grader/tinymodel/trained.npz",
            "exercises/notebooks/trained_heads.ipynb", "exercises/notebooks/trained_heads.zh.ipynb",
            "grader/viz/pages/explainer.en.html", "grader/viz/pages/explainer.zh.html",
            f"grader/content/stubs/{ASSIGNMENT}.py"} <= files
    assert not any(name.startswith(("solutions/", "tests/")) for name in files)
    assert not any("/hidden/" in name or "/mutants/" in name or name.endswith(("/cases.py", "twinning.py", "assignments/reference.py",
                   "course_key", "nbgrader_config.py", ".db")) for name in files)
    assert not any(name.startswith("grader/assignments/kv_cache/public") for name in files)  # one exercise's checks
    assert not any(name.startswith("grader/verbs/") and name.split("/")[-1] in ("grade.py", "release.py",
                                                                               "similarity.py") for name in files)
    assert not any(name.startswith("grader/similarity/") for name in files)
    stub = (release / "exercises" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")
    assert stub == (PROJECT / "exercises" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")
    with zipfile.ZipFile(release.with_suffix(".zip")) as archive:
        zipped = {name.split("/", 1)[1] for name in archive.namelist() if not name.endswith("/")}
    assert zipped == files


def test_instructor_only_paths():
    assert instructor_only("assignments/multihead_attention/hidden/test_drawn_inputs.py", ASSIGNMENT)
    assert instructor_only("assignments/kv_cache/public/test_cache.py", ASSIGNMENT)
    assert instructor_only("assignments/kv_cache/public_cases.npz", ASSIGNMENT)
    assert instructor_only("assignments/multihead_attention/cases.py", ASSIGNMENT)
    assert instructor_only("assignments/kv_cache/cases.py", ASSIGNMENT) and instructor_only("batch/run.py", ASSIGNMENT)
    assert instructor_only("assignments/multihead_attention/mutants/correct/loops.py", ASSIGNMENT)
    assert instructor_only("assignments/twinning.py", ASSIGNMENT)
    assert instructor_only("similarity/compare.py", ASSIGNMENT) and instructor_only("verbs/similarity.py", ASSIGNMENT)
    assert instructor_only("assignments/multihead_attention/notes.md", ASSIGNMENT)  # unknown parts stay
    assert not instructor_only("grading/assignment.py", ASSIGNMENT)
    assert not instructor_only("assignments/__init__.py", ASSIGNMENT)
    assert not instructor_only("assignments/kv_cache/misconceptions.toml", ASSIGNMENT)
    assert not instructor_only("assignments/multihead_attention/tutorial/en.toml", ASSIGNMENT)
    assert not instructor_only("assignments/multihead_attention/public/test_heads.py", ASSIGNMENT)
    assert not instructor_only("assignments/multihead_attention/signatures.py", ASSIGNMENT)  # its student_modules
    assert instructor_only("assignments/multihead_attention/signatures.py", "kv_cache")
    assert not instructor_only("verbs/check.py", ASSIGNMENT)


def test_release_verb_help_and_usage_errors(tmp_path):
    runner = CliRunner()
    done = runner.invoke(root, ["release", "--help"])
    assert done.exit_code == 0 and "--student" in done.output and "--nbgrader" in done.output
    nothing = runner.invoke(root, ["release"])
    assert nothing.exit_code == 2 and "--student DIR" in nothing.output
    target = tmp_path / "out"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    taken = runner.invoke(root, ["release", "--student", str(target), "--no-zip"])
    assert taken.exit_code == 2 and "--force" in taken.output  # never overwritten silently
    assert (target / "keep.txt").read_text() == "mine"


def test_release_command_writes_both_and_reports_json(tmp_path):
    done = subprocess.run(["mha", "release", "--student", str(tmp_path / "s"), "--nbgrader", str(tmp_path / "c"),
                           "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert Path(report["student"]["archive"]).is_file()
    assert sum(report["nbgrader"]["points"].values()) > 0
    assert (tmp_path / "c" / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()


def make_venv_with_our_dependencies(venv: Path) -> Path:
    """A new venv whose own site-packages come first and whose dependencies are the ones running these tests.

    Nothing is downloaded. ``--system-site-packages`` would not do: made from
    inside a venv, it sees the base interpreter's packages, not this venv's
    (where click and platformdirs are). So this environment's site-packages
    are appended with a ``.pth`` file; their own ``.pth`` files (an editable
    install of the project) are not run, so ``grader`` comes from the release.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    ours = dict.fromkeys([*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    Path(own, "_mha_test_dependencies.pth").write_text("".join(f"{path}\n" for path in ours), encoding="utf-8")
    return python


@pytest.mark.slow
def test_release_installs_in_a_fresh_venv_and_checks_stubs_and_reference(release, tmp_path):
    copy = tmp_path / "student"
    shutil.copytree(release, copy)
    venv = tmp_path / "venv"
    python, mha = make_venv_with_our_dependencies(venv), venv / "bin" / "mha"
    # without `wheel` here, pip builds in isolation from its configured index, as `pip install .` does for students
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("wheel") else []
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", *isolation, "--ignore-installed",
                              "--quiet", str(copy)], capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "MHA_SOLUTIONS", "MHA_EXERCISES", "VIRTUAL_ENV")}
    located = subprocess.run([str(python), "-c", "import grader, grader.paths as p; "
                              "print(grader.__file__); print(p.solutions_dir())"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    where, solutions = located.stdout.split("\n")[:2]
    assert Path(where).is_relative_to(venv) and solutions == "None"

    stubs = subprocess.run([str(mha), "check", "--json"], cwd=copy, env=env, capture_output=True, text=True)
    assert stubs.returncode == 1, stubs.stderr
    result = json.loads(stubs.stdout)
    assert result["score"] == 0 and {t["misconception"] for t in result["tests"]} == {"not-implemented"}

    shutil.copy(PROJECT / "solutions" / f"{ASSIGNMENT}.py", copy / "exercises" / f"{ASSIGNMENT}.py")
    reference = subprocess.run([str(mha), "check", "--lang", "zh"], cwd=copy, env=env, capture_output=True,
                               text=True)
    assert reference.returncode == 0, reference.stdout + reference.stderr
    assert "全部检查通过" in reference.stdout

    hidden = subprocess.run([str(mha), "check", "--all"], cwd=copy, env=env, capture_output=True, text=True)
    assert hidden.returncode == 0 and "only the public checks ran" in hidden.stdout
    verbs = subprocess.run([str(mha), "--help"], cwd=copy, env=env, capture_output=True, text=True, check=True)
    assert "quiz" in verbs.stdout and "check" in verbs.stdout
    assert not re.search(r"^\s+(grade|release)\s", verbs.stdout, re.MULTILINE)
    _the_warm_server_answers_in_the_release(mha, copy, env)


def _the_warm_server_answers_in_the_release(mha: Path, copy: Path, env: dict) -> None:
    """The release's `mha` is the warm server's launcher: a second check is answered warm, and says the same."""
    import warm_logs
    from test_warm_check import _wait_listening, warm_settings

    with warm_settings() as (runtime, settings):
        runs = []
        for _ in range(2):
            runs.append(subprocess.run([str(mha), "check"], cwd=copy, env={**env, **settings}, capture_output=True,
                                       text=True, stdin=subprocess.DEVNULL))
            _wait_listening(runtime)
        assert [run.returncode for run in runs] == [0, 0], runs[-1].stderr
        assert runs[0].stdout == runs[1].stdout and warm_logs.served(runtime) == 1


def solution_lines_of(path: Path) -> set[str]:
    """The telling lines of one reference's solution blocks (this file's own reading, not the builder's)."""
    lines, block = set(), None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() == "### BEGIN SOLUTION":
            block = []
        elif line.strip() == "### END SOLUTION":
            lines |= {code for code in block if telling(code)}
            block = None
        elif block is not None and code_part(line):
            block.append(code_part(line))
    return lines


EXERCISES = sorted(path.stem for path in (PROJECT / "solutions").glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("assignment", EXERCISES)
def test_a_release_holds_no_line_of_another_exercises_solution(assignment, tmp_path):
    release = build_student_release(target=tmp_path / assignment, assignment=assignment, archive=False)
    others = set().union(*(solution_lines_of(PROJECT / "solutions" / f"{other}.py")
                           for other in EXERCISES if other != assignment))
    found = [f"{path.relative_to(release.folder)}: {line!r}" for path in sorted(release.folder.rglob("*"))
             if path.suffix in (".py", ".ipynb") for line in code_lines(path) if line in others]
    assert found == []
    readme = (release.folder / "README.md").read_text(encoding="utf-8")
    if release.withheld:
        assert "Code you bring yourself" in readme and all(name in readme for name in release.withheld)
        stub = (release.folder / "exercises" / f"{assignment}.py").read_text(encoding="utf-8")
        assert stub.count("paste your own") + stub.count("Withheld from this release") >= len(release.withheld)
        compile(stub, "stub", "exec")  # still a module a student can run


def test_the_explicit_option_gives_the_code_and_the_readme_says_so(tmp_path):
    done = CliRunner().invoke(root, ["release", "--student", str(tmp_path / "kv"), "--assignment", "kv_cache",
                                     "--no-zip", "--give-building-blocks", "--lang", "zh"])
    assert done.exit_code == 0, done.output
    assert "包含了另一个练习的答案" in done.output and "--give-building-blocks" in done.output  # said in the run's language
    stub = (tmp_path / "kv" / "exercises" / "kv_cache.py").read_text(encoding="utf-8")
    assert stub == (PROJECT / "exercises" / "kv_cache.py").read_text(encoding="utf-8")  # the checkout's stub
    readme = (tmp_path / "kv" / "README.md").read_text(encoding="utf-8")
    assert "这个发布版本直接给出的代码" in readme and "`softmax`" in readme and "--give-building-blocks" in readme
    default = CliRunner().invoke(root, ["release", "--student", str(tmp_path / "kv2"), "--assignment", "kv_cache",
                                        "--no-zip"])
    assert default.exit_code == 0 and "left for students to bring" in default.output
    assert "def softmax(x):" in (tmp_path / "kv2" / "exercises" / "kv_cache.py").read_text(encoding="utf-8")


def test_a_verb_that_needs_the_notebook_extra_names_what_to_install(tmp_path, monkeypatch):
    """Where nbformat cannot be imported (``sys.modules`` entry None: the import fails as if not installed)."""
    import sys

    monkeypatch.setitem(sys.modules, "nbformat", None)
    done = CliRunner().invoke(root, ["release", "--student", str(tmp_path / "s"), "--no-zip"])
    assert done.exit_code == 2, done.output
    assert "mha release needs nbformat, which is not installed" in done.output
    assert '[notebook]"' in done.output and "Traceback" not in done.output
    chinese = CliRunner().invoke(root, ["release", "--student", str(tmp_path / "z"), "--no-zip", "--lang=zh"])
    assert chinese.exit_code == 2 and "mha release 需要 nbformat" in chinese.output
