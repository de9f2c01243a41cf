"""The student release as a student gets it: built, installed alone in a fresh venv under /tmp, every command
its README names run there, its notebooks run in a real kernel of that venv.

Installs come from a wheelhouse of the dependencies installed here (``tests/wheelhouse.py``), so nothing is
downloaded; the release itself is installed with pip from its folder, as ``pip install .`` does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROJECT, require

ASSIGNMENT = "multihead_attention"
pytestmark = pytest.mark.slow


def _venv(folder: Path, wheels: Path, *requirements: str) -> Path:
    """A fresh venv at ``folder`` with ``requirements`` installed from ``wheels`` only; returns its bin folder."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(folder)], check=True, capture_output=True)
    install = subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index",
                              "--find-links", str(wheels), *requirements], capture_output=True, text=True,
                             env=_clean_env(folder.parent))
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return folder / "bin"


def _clean_env(home: Path) -> dict:
    """The environment of a student's shell: nothing of this checkout, a home of its own."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", "VIRTUAL_ENV", "MHA_SOLUTIONS", "MHA_EXERCISES", "MHA_COURSE_KEY",
                                  "MHA_CONFIG_DIR", "JUPYTER_PATH", "PYTHONHOME")}
    (home / "home").mkdir(parents=True, exist_ok=True)
    return environment | {"HOME": str(home / "home"), "LANG": "C.UTF-8", "PIP_NO_CACHE_DIR": "1",
                          "XDG_CONFIG_HOME": str(home / "home" / ".config"),
                          "XDG_DATA_HOME": str(home / "home" / ".local" / "share"),
                          "MPLCONFIGDIR": str(home / "home" / ".mpl")}


class Student:
    """A student's shell in the release folder, with the release's venv first on PATH."""

    def __init__(self, folder: Path, bin_dir: Path, home: Path):
        self.folder, self.bin = folder, bin_dir
        self.env = _clean_env(home) | {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(self, *words: str, stdin: str = "", timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run([str(self.bin / words[0]), *words[1:]], cwd=self.folder, env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=timeout)
        assert "Traceback (most recent call last)" not in done.stdout + done.stderr, (words, done.stderr[-3000:])
        return done

    def write(self, text: str) -> None:
        (self.folder / "exercises" / f"{ASSIGNMENT}.py").write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    """The release built from this checkout, then a venv holding it (and a kernel) and nothing of the repo."""
    from grader.authoring.release import build_student_release
    from wheelhouse import build_wheelhouse

    work = tmp_path_factory.mktemp("handout")
    release = build_student_release(target=work / "mha-student", assignment=ASSIGNMENT).folder
    wheels = work / "wheels"
    build_wheelhouse(wheels, also=("ipykernel", "nbformat", "setuptools", "wheel"))
    bin_dir = _venv(work / "venv", wheels, "setuptools", "wheel")
    install = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--no-index",
                              "--find-links", str(wheels), "--no-build-isolation", f"{release}", "ipykernel"],
                             capture_output=True, text=True, env=_clean_env(work))
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    student = Student(release, bin_dir, work)
    located = subprocess.run([str(bin_dir / "python"), "-c", "import grader, grader.paths as p; "
                              "print(grader.__file__, p.solutions_dir())"], cwd=work, env=student.env,
                             capture_output=True, text=True, check=True)  # not in the release folder, which holds grader/
    where, solutions = located.stdout.split()
    assert Path(where).is_relative_to(work / "venv") and solutions == "None"
    return student, wheels, work


def reference() -> str:
    return (PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")


def test_the_release_readme_names_what_is_run_here(handout):
    student, _, _ = handout
    readme = (student.folder / "README.md").read_text(encoding="utf-8")
    for command in ("mha check --function split_heads", "mha check --lang zh", "mha check --unlock", "mha quiz",
                    "mha drill", "mha viz exercises/multihead_attention.py", "mha viz --trained", "mha demo"):
        assert command in readme, command
    for path in re.findall(r"`((?:exercises|demos)/[\w./]+)`", readme):
        assert (student.folder / path).exists() or "{" in path, path


def test_mha_check_on_the_stub_a_buggy_and_a_correct_file(handout):
    student, _, _ = handout
    stub = student.run("mha", "check", "--json")
    assert stub.returncode == 1, stub.stderr
    assert {test["misconception"] for test in json.loads(stub.stdout)["tests"]} == {"not-implemented"}
    student.write(reference().replace("/ np.sqrt(d_k)", ""))
    buggy = student.run("mha", "check", "--json")
    assert buggy.returncode == 1 and "attention-no-scale" in json.loads(buggy.stdout)["misconceptions"]
    student.write(reference())
    only = student.run("mha", "check", "--function", "split_heads")
    assert only.returncode == 0, only.stdout + only.stderr
    chinese = student.run("mha", "check", "--lang", "zh")
    assert chinese.returncode == 0 and "全部检查通过" in chinese.stdout
    unlock = student.run("mha", "check", "--unlock", stdin="")  # no answer given: asks, then stops with a sentence
    assert "Before the checks of softmax run" in unlock.stdout
    assert unlock.returncode == 2 and "no function is unlocked yet" in unlock.stderr


def test_mha_viz_with_and_without_a_file_and_trained(handout):
    student, _, work = handout
    student.write((PROJECT / "exercises" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8"))
    stub = student.run("mha", "viz", "--out", str(work / "stub.png"))
    assert stub.returncode == 1 and "forward is not written yet" in stub.stderr
    trained_stub = student.run("mha", "viz", "--trained", "--out", str(work / "t0.png"))
    assert trained_stub.returncode == 2 and "not written yet" in trained_stub.stderr
    student.write(reference())
    own = student.run("mha", "viz", "--out", str(work / "own.png"))
    assert own.returncode == 0 and "your own exercises/multihead_attention.py is drawn" in own.stderr
    named = student.run("mha", "viz", f"exercises/{ASSIGNMENT}.py", "--out", str(work / "named.png"))
    assert named.returncode == 0 and (work / "named.png").stat().st_size > 1000
    trained = student.run("mha", "viz", "--trained", "--ablate", "--out", str(work / "trained.png"))
    assert trained.returncode == 0, trained.stderr
    assert "induction" in trained.stdout and (work / "trained-ablation.png").is_file()


def test_mha_demo_quiz_and_drill(handout):
    student, _, work = handout
    demo = student.run("mha", "demo", "--out", str(work / "page.html"))
    assert demo.returncode == 0 and "page made with the release" in demo.stderr
    assert (work / "page.html").read_bytes() == (student.folder / "grader" / "viz" / "pages" / "explainer.en.html").read_bytes()
    custom = student.run("mha", "demo", "--out", str(work / "x.html"), "--heads", "2")
    assert custom.returncode == 2 and "--heads" in custom.stderr
    listed = student.run("mha", "quiz", "--list")
    assert listed.returncode == 0 and listed.stdout.strip()
    quiz = student.run("mha", "quiz", stdin="")  # no answer given: the questions, then what was left
    assert quiz.returncode == 0 and "questions left unanswered" in quiz.stdout and "Total: 0/0" in quiz.stdout
    drill = student.run("mha", "drill", "softmax", "--workspace", str(work / "drill"))
    assert drill.returncode == 0, drill.stdout + drill.stderr
    assert (work / "drill").is_dir()
    verbs = student.run("mha", "--help")
    assert not re.search(r"^\s+(grade|release|audit|merge)\s", verbs.stdout, re.MULTILINE)


def test_the_release_shows_every_help_page_in_chinese(handout):
    """help.toml ships with the release: each of its verbs has its page in Chinese under a Chinese locale."""
    from test_help_language import _prose

    student, _, work = handout
    verbs = re.findall(r"^  (\w+) ", student.run("mha", "--help").stdout.split("Commands:")[1], re.MULTILINE)
    assert "check" in verbs and "quiz" in verbs, verbs
    for verb in ["", *verbs]:
        done = subprocess.run([str(student.bin / "mha"), *([verb] if verb else []), "--help"], cwd=work,
                              env=student.env | {"LANG": "zh_CN.UTF-8"}, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("用法：mha") and "选项：" in done.stdout, done.stdout
        assert _prose(done.stdout) == [], done.stdout


def test_the_explainer_page_of_the_release_in_chromium(handout, tmp_path):
    from chromium_driver import Chromium, find_chromium

    student, _, _ = handout
    binary = find_chromium()
    require(binary is not None, "Chromium is not installed (Debian: apt install chromium)")
    browser = Chromium(binary, tmp_path / "profile")
    try:
        browser.open((student.folder / "demos" / "explainer.html").as_uri())
        title = browser.evaluate("document.title")
        panels = browser.evaluate("document.querySelectorAll('svg, canvas, table').length")
        assert title and panels > 0
        assert browser.console_errors() == []
        assert all(url.startswith(("file:", "data:", "about:")) for url in browser.requested_urls())
    finally:
        browser.close()


# ---- the notebooks in a real kernel of the release's venv --------------------------------------
def _kernel(student: Student, work: Path) -> str:
    """A kernel spec running the release venv's python; returns its name (JUPYTER_PATH points at it)."""
    spec = work / "jupyter" / "kernels" / "release"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(student.bin / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "release", "language": "python"}), encoding="utf-8")
    return "release"


def _execute(notebook, student: Student, work: Path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    name = _kernel(student, work)
    for key in ("PYTHONPATH", "MHA_SOLUTIONS", "MHA_EXERCISES", "MHA_COURSE_KEY", "MHA_CONFIG_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(work / "jupyter"))
    monkeypatch.setenv("HOME", str(work / "home"))
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name=name, allow_errors=True,
                                     resources={"metadata": {"path": str(student.folder / "exercises" / "notebooks")}})
    client.execute()
    return notebook


def _errors(notebook) -> list[tuple[str, str]]:
    return [(output.get("ename", ""), output.get("evalue", "")) for cell in notebook.cells if cell.cell_type == "code"
            for output in cell.get("outputs", ()) if output.output_type == "error"]


def _text(notebook) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", ()) if cell.cell_type == "code" else ():
            parts.append(output.get("text", "") + json.dumps(output.get("data", {}), ensure_ascii=False))
    return "\n".join(parts)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_tutorial_notebook_filled_in_runs_to_full_public_points(handout, monkeypatch, lang):
    from grader.authoring.notebooks import build_notebook

    student, _, work = handout
    notebook = _execute(build_notebook(lang=lang, filling="solution"), student, work, monkeypatch)
    assert _errors(notebook) == []
    text = _text(notebook)
    assert "ModuleNotFoundError" not in text and "image/png" in text  # show_heads drew its figures
    last = re.findall(r"<check: ([\d.]+)/([\d.]+) points", text)
    assert last and last[-1][0] == last[-1][1] and float(last[-1][1]) > 0, last


@pytest.mark.parametrize("name", [f"{ASSIGNMENT}.ipynb", f"{ASSIGNMENT}.zh.ipynb"])
def test_the_shipped_tutorial_notebook_with_stubs_shows_only_the_students_own_errors(handout, monkeypatch, name):
    import nbformat

    student, _, work = handout
    notebook = nbformat.read(student.folder / "exercises" / "notebooks" / name, as_version=4)
    notebook = _execute(notebook, student, work, monkeypatch)
    assert {ename for ename, _ in _errors(notebook)} <= {"NotImplementedError"}
    text = _text(notebook)
    assert "ModuleNotFoundError" not in text and "ImportError" not in text
    assert re.findall(r"<check: 0/([\d.]+) points", text)  # the check cells ran and failed, as they should


def test_the_trained_heads_notebook_ships_and_its_shipped_model_runs_on_the_students_code(handout, monkeypatch):
    import nbformat

    student, _, work = handout
    student.write(reference())
    for lang in ("en", "zh"):
        suffix = "" if lang == "en" else ".zh"
        assert (student.folder / "exercises" / "notebooks" / f"trained_heads{suffix}.ipynb").is_file()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(
        "from grader.viz.trained_views import show_trained, show_ablation\n"  # run in exercises/notebooks/
        "show_trained()\nshow_ablation()")]
    notebook = _execute(notebook, student, work, monkeypatch)
    assert _errors(notebook) == []
    assert "image/png" in _text(notebook)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_shipped_trained_heads_notebook_runs_top_to_bottom_replaying_the_recorded_run(handout, monkeypatch, lang):
    """The release holds no attention_backward: the training cell replays the run recorded at the build, and
    every later cell runs the student's own attention on its weights."""
    import nbformat

    student, _, work = handout
    student.write(reference())
    name = "trained_heads.ipynb" if lang == "en" else "trained_heads.zh.ipynb"
    notebook = nbformat.read(student.folder / "exercises" / "notebooks" / name, as_version=4)
    notebook = _execute(notebook, student, work, monkeypatch)
    assert _errors(notebook) == []
    cells = {cell.id: cell for cell in notebook.cells if cell.cell_type == "code"}
    trained = _text(nbformat.v4.new_notebook(cells=[cells["demo-train"]]))
    assert ("replayed the 800 steps" if lang == "en" else "重放的是") in trained
    assert "image/png" in trained
    when = _text(nbformat.v4.new_notebook(cells=[cells["demo-when"]]))
    assert "None" not in when  # both heads formed in the replayed run, as measured with the student's code
    for cell in ("demo-look", "demo-ablate", "demo-shipped"):
        assert "image/png" in _text(nbformat.v4.new_notebook(cells=[cells[cell]])), cell


def test_the_trained_heads_notebook_with_the_stub_says_what_to_write(handout, monkeypatch):
    import nbformat

    student, _, work = handout
    student.write((PROJECT / "exercises" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8"))
    notebook = nbformat.read(student.folder / "exercises" / "notebooks" / "trained_heads.ipynb", as_version=4)
    notebook = _execute(notebook, student, work, monkeypatch)
    errors = _errors(notebook)  # "Run All" stops at the first: it says what to write, and where
    assert errors and errors[0][0] == "ConfigError", errors
    assert "your split_heads" in errors[0][1] and "exercises/multihead_attention.py" in errors[0][1], errors
    assert "not written yet" in errors[0][1]
    assert "ModuleNotFoundError" not in _text(notebook) and "ImportError" not in _text(notebook)
    assert not {ename for ename, _ in errors} & {"ModuleNotFoundError", "ImportError"}


def test_a_student_who_worked_in_the_notebook_gets_the_trained_model_on_the_notebooks_code(handout):
    """The script left as handed out, the tutorial notebook filled in: mha viz and mha viz --trained use the
    notebook, as mha grade would grade it (grader/entries/choosing.py)."""
    from grader.authoring.notebooks import build_notebook, notebook_text

    student, _, work = handout
    student.write((PROJECT / "exercises" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8"))
    notebook = student.folder / "exercises" / "notebooks" / f"{ASSIGNMENT}.ipynb"
    shipped = notebook.read_text(encoding="utf-8")
    try:
        notebook.write_text(notebook_text(build_notebook(lang="en", filling="solution")), encoding="utf-8")
        trained = student.run("mha", "viz", "--trained", "--out", str(work / "nb-trained.png"))
        assert trained.returncode == 0, trained.stdout + trained.stderr
        assert "induction" in trained.stdout and (work / "nb-trained.png").stat().st_size > 1000
        drawn = student.run("mha", "viz", "--out", str(work / "nb-own.png"))
        assert drawn.returncode == 0, drawn.stderr
        assert f"exercises/notebooks/{ASSIGNMENT}.ipynb is drawn" in drawn.stderr
    finally:
        notebook.write_text(shipped, encoding="utf-8")
    again = student.run("mha", "viz", "--trained", "--out", str(work / "nb-stub.png"))
    assert again.returncode == 2 and "not written yet" in again.stderr


# ---- an install without the notebook extra -------------------------------------------------------
def test_without_the_notebook_extra_every_command_ends_in_a_result_or_a_message(handout, tmp_path):
    student, wheels, work = handout
    bare = Student(student.folder, _venv(tmp_path / "bare", wheels, "setuptools", "wheel"), tmp_path)
    install = subprocess.run([str(bare.bin / "python"), "-m", "pip", "install", "--quiet", "--no-index",
                              "--find-links", str(wheels), "--no-build-isolation", str(student.folder)],
                             capture_output=True, text=True, env=bare.env)
    assert install.returncode == 0, install.stderr[-3000:]
    assert bare.run("python", "-c", "import importlib.util as u; print(u.find_spec('nbformat'))").stdout.strip() == "None"
    student.write(reference())
    verbs = bare.run("mha", "--help").stdout
    listed = re.findall(r"^  (\w+)\s", verbs.split("Commands:")[1], re.MULTILINE)
    assert {"check", "quiz", "viz", "demo", "drill"} <= set(listed)
    for verb in listed:
        assert bare.run("mha", verb, "--help").returncode == 0
    assert bare.run("mha", "check").returncode == 0
    notebook_check = bare.run("mha", "check", f"exercises/notebooks/{ASSIGNMENT}.ipynb")
    assert notebook_check.returncode in (1, 2) and (notebook_check.stdout + notebook_check.stderr).strip()
    assert bare.run("mha", "viz", "--out", str(tmp_path / "h.png")).returncode == 0
    assert bare.run("mha", "demo", "--out", str(tmp_path / "d.html")).returncode == 0
    assert bare.run("mha", "quiz", "--list").returncode == 0


def test_mha_release_without_the_notebook_extra_names_what_to_install(tmp_path):
    """An instructor's checkout installed with `pip install .` (no extra): a message, never a traceback."""
    from wheelhouse import build_wheelhouse

    wheels = tmp_path / "wheels"
    build_wheelhouse(wheels, also=("setuptools", "wheel"))
    bin_dir = _venv(tmp_path / "venv", wheels, "setuptools", "wheel")
    copy = tmp_path / "checkout"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns(".git", "*.egg-info", "__pycache__", ".venv"))
    install = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--no-index",
                              "--find-links", str(wheels), "--no-build-isolation", str(copy)],
                             capture_output=True, text=True, env=_clean_env(tmp_path))
    assert install.returncode == 0, install.stderr[-3000:]
    shell = Student(tmp_path, bin_dir, tmp_path)
    shell.env["MHA_SOLUTIONS"] = str(copy / "solutions")
    done = shell.run("mha", "release", "--student", str(tmp_path / "out"), "--no-zip")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "needs nbformat" in done.stderr and "[notebook]" in done.stderr
    chinese = shell.run("mha", "release", "--student", str(tmp_path / "out2"), "--no-zip", "--lang", "zh")
    assert "需要 nbformat" in chinese.stderr



# ---- the GitHub Classroom starter, as the workflow runs it -----------------------------------------
def test_the_classroom_starter_runs_its_workflow_steps_in_a_fresh_venv(handout, tmp_path):
    """The workflow's own steps (its `pip install .`, then each graded step's command) in a venv of the starter
    alone: the stub scores 0, a bug loses its function's points, the reference every point."""
    import shlex

    import yaml

    from grader.authoring.classroom import add_classroom_autograding
    from grader.authoring.release import build_student_release

    _, wheels, _ = handout
    starter = build_student_release(target=tmp_path / "starter", assignment=ASSIGNMENT, archive=False).folder
    add_classroom_autograding(folder=starter, assignment=ASSIGNMENT)
    steps = yaml.safe_load((starter / ".github" / "workflows" / "classroom.yml").read_text(encoding="utf-8"))
    steps = steps["jobs"]["run-autograding-tests"]["steps"]
    installs = [step["run"] for step in steps if "run" in step]
    graded = [step for step in steps if "with" in step and "command" in step["with"]]
    assert installs and graded
    bin_dir = _venv(tmp_path / "venv", wheels, "setuptools", "wheel")
    shell = Student(starter, bin_dir, tmp_path)
    for command in installs:
        words = shlex.split(command)
        assert words[:4] == ["python", "-m", "pip", "install"], command
        done = shell.run("python", *words[1:], "--no-index", "--find-links", str(wheels), "--no-build-isolation")
        assert done.returncode == 0, done.stderr[-3000:]

    def earned() -> dict[str, float]:
        points = {}
        for step in graded:
            words = shlex.split(step["with"]["command"])
            done = shell.run(*words, timeout=60 * step["with"]["timeout"])
            assert done.returncode in (0, 1), done.stdout + done.stderr
            points[step["id"]] = float(step["with"]["max-score"]) if done.returncode == 0 else 0.0
        return points

    total = sum(float(step["with"]["max-score"]) for step in graded)
    assert sum(earned().values()) == 0
    exercise = starter / "exercises" / f"{ASSIGNMENT}.py"
    exercise.write_text(reference().replace("/ np.sqrt(d_k)", ""), encoding="utf-8")
    buggy = earned()
    assert buggy["softmax"] > 0 and buggy["scaled-dot-product-attention"] == 0
    exercise.write_text(reference(), encoding="utf-8")
    assert sum(earned().values()) == total


def test_every_module_of_the_installed_release_imports_alone(handout):
    """Like tests/test_layering.py's check, on what the release installed: a module that imports a withheld one
    fails here, however lazily its import is written at the top."""
    from concurrent.futures import ThreadPoolExecutor

    student, _, work = handout
    site = Path(subprocess.run([str(student.bin / "python"), "-c", "import grader, os; print(os.path.dirname(grader.__file__))"],
                               cwd=work, env=student.env, capture_output=True, text=True, check=True).stdout.strip())
    modules = sorted(".".join(path.relative_to(site.parent).with_suffix("").parts).removesuffix(".__init__")
                     for path in site.rglob("*.py") if "worker" not in path.parts and path.parent.name != "public")
    assert "grader.grading.reference" in modules and not any(".cases" in name or "twinning" in name for name in modules)

    def alone(module: str) -> tuple[str, str]:
        done = subprocess.run([str(student.bin / "python"), "-c", f"import {module}"], cwd=work, env=student.env,
                              capture_output=True, text=True)
        return module, "" if done.returncode == 0 else done.stderr[-500:]

    with ThreadPoolExecutor(max_workers=2) as pool:
        failed = {module: error for module, error in pool.map(alone, modules) if error}
    assert failed == {}
