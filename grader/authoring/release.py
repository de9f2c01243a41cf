"""What instructors hand out: a student release, and a ready nbgrader course.

``build_student_release`` writes a folder (and a zip) with exactly what a
student needs: the stub, the tutorial notebooks, the grader package with the
public checks only, a ``pyproject.toml`` so that ``pip install .`` gives the
``mha`` command, and a pre-rendered explainer page. It never holds the
solutions, hidden suites, buggy twins, the instructor's verbs or any course
key. ``build_nbgrader_course`` writes an nbgrader course folder whose test
cells call the project's suites, so nbgrader's grade and ``mha grade`` agree.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

from grader.content.loader import TextTable
from grader.errors import ConfigError, ContentError, UsageError
from grader.i18n import LANGUAGES
from grader.paths import CONTENT_DIR, DEFAULT_ASSIGNMENT, PACKAGE_DIR, PROJECT_DIR, solution_path

RELEASE_TEXTS_FILE = CONTENT_DIR / "release.toml"
# What of the grader package a student must not get is said by folder: the
# instructor's layers (class grading, authoring, similarity) and verbs, and in ``assignments/``
# all but what an exercise's students read and run. Paths are relative to the package.
# The trained model (tinymodel) ships: it computes with the core exercise's blocks, which in a release are
# the student's own (grader/tinymodel/blocks.py), so it hands out no answer.
INSTRUCTOR_FOLDERS = ("batch", "authoring", "similarity")
# What of an exercise's folder ships: of every exercise its spec and texts; of the
# released one its public checks too, and the modules its spec lists as
# ``student_modules``. Never its cases and twins (``cases.py``), hidden checks or
# mutant library: whatever else a folder holds stays.
EXERCISE_TEXTS = ("__init__.py", "exercise.toml", "checks.toml", "misconceptions.toml", "tutorial")
RELEASED_PARTS = ("public", "public_cases.npz")
INSTRUCTOR_VERBS = ("verbs/grade.py", "verbs/merge.py", "verbs/audit.py", "verbs/release.py", "verbs/similarity.py")
NBGRADER_CONFIG = '''\
# nbgrader configuration of this mha-lab course, written by `mha release --nbgrader`.
# Run nbgrader from this folder; see README.md for the commands.
c = get_config()  # noqa: F821 - nbgrader provides get_config

# A solution region becomes this comment. The `raise NotImplementedError` that follows
# each region stays, so an unfinished function says so, while the constructor still works.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}

# Each test cell grades the notebook's code in a sandboxed worker (about a second);
# the limit leaves room for slow machines.
c.Execute.timeout = 300
'''


@dataclass(frozen=True)
class StudentRelease:
    folder: Path
    archive: Path | None
    files: tuple[str, ...]  # relative to ``folder``
    withheld: tuple[str, ...] = ()  # given functions left for the student, being another exercise's answer
    given_away: tuple[str, ...] = ()  # such functions handed out anyway (``give_building_blocks``)

    def to_dict(self) -> dict:
        return {"folder": str(self.folder), "archive": str(self.archive) if self.archive else None,
                "files": list(self.files), "withheld": list(self.withheld), "given_away": list(self.given_away)}


@dataclass(frozen=True)
class CourseRelease:
    folder: Path
    notebook: Path
    points: dict  # test cell id -> points

    def to_dict(self) -> dict:
        return {"folder": str(self.folder), "notebook": str(self.notebook), "points": self.points}


RELEASE_TEXTS = TextTable(RELEASE_TEXTS_FILE)  # the READMEs' sections and what ``mha release`` says

# ---- the student release -------------------------------------------------------------------
def build_student_release(*, target: Path, assignment: str = DEFAULT_ASSIGNMENT, lang: str = "en",
                          archive: bool = True, force: bool = False,
                          give_building_blocks: bool = False) -> StudentRelease:
    """Write the student release of ``assignment`` to ``target`` (and ``target.zip``).

    Given code that is another exercise's answer is left for the student to bring
    (``grader.authoring.givens``) unless ``give_building_blocks``; the README says which.
    """
    from grader.authoring.givens import other_answers, withhold_given_answers
    from grader.grading.assignment import get_assignment
    from grader.stubs import generate_stub

    exercise = get_assignment(assignment)
    reference = solution_path(assignment)
    if reference is None:
        raise ConfigError(f"the stubs are generated from solutions/{assignment}.py, which is not installed here")
    target = Path(target)
    _prepare(target, force=force)
    (target / "exercises").mkdir(parents=True)
    stub = generate_stub(reference.read_text(encoding="utf-8"), origin=str(reference))
    withheld = withhold_given_answers(stub, answers=other_answers(assignment, reference.parent))
    if not give_building_blocks:
        stub = withheld.source
    (target / "exercises" / f"{assignment}.py").write_text(stub, encoding="utf-8")
    _copy_package(target / "grader", exercise.name)
    (target / "grader" / "content" / "stubs").mkdir(parents=True, exist_ok=True)  # the drill starts from it
    (target / "grader" / "content" / "stubs" / f"{assignment}.py").write_text(stub, encoding="utf-8")
    notebooks = _write_notebooks(target, assignment)
    demo = _write_explainer(target / "demos" / "explainer.html", target / "grader", lang)
    readme = student_readme(assignment=assignment, functions=exercise.functions, notebooks=notebooks,
                            demo=demo, lang=lang)
    if withheld.functions:
        key = "student_gives_away" if give_building_blocks else "student_withholds"
        readme = readme.rstrip("\n") + "\n\n" + RELEASE_TEXTS.say(key, lang,
            assignment=assignment, functions=", ".join(f"`{name}`" for name in withheld.functions)).strip("\n")
    (target / "README.md").write_text(readme.strip("\n") + "\n", encoding="utf-8")
    (target / "pyproject.toml").write_text(release_pyproject(target / "grader"), encoding="utf-8")
    files = tuple(sorted(str(path.relative_to(target)) for path in target.rglob("*") if path.is_file()))
    zip_path = None
    if archive:
        zip_path = Path(shutil.make_archive(str(target), "zip", root_dir=target.parent, base_dir=target.name))
    return StudentRelease(folder=target, archive=zip_path, files=files,
                          withheld=() if give_building_blocks else withheld.functions,
                          given_away=withheld.functions if give_building_blocks else ())


def _prepare(target: Path, *, force: bool) -> None:
    if target.exists() and any(target.iterdir()):
        if not force:
            raise UsageError(f"{target} already exists and is not empty; choose a new folder or add --force")
        shutil.rmtree(target)
    target.mkdir(parents=True, exist_ok=True)


def student_readme(*, assignment: str, functions: tuple[str, ...], notebooks: bool, demo: bool, lang: str) -> str:
    """The release's README: the commands of the core exercise's release (notebooks, heatmaps, the trained
    model) where its notebooks ship, else those that work on any exercise, each naming its own functions."""
    from grader.practice.drill import drills

    kind = "core" if notebooks else "track"
    alone = [name for name in drills(assignment) if name != "all"]  # the functions one may drill alone
    fields = {"assignment": assignment, "function": functions[0],
              "demo_line": RELEASE_TEXTS.template("student_demo", lang) if demo else "",
              "drill_line": RELEASE_TEXTS.say("student_drill_one" if alone else "student_drill_all", lang,
                  drill=alone[0] if alone else ""),
              "functions": ", ".join(f"`{name}`" for name in functions)}
    intro = RELEASE_TEXTS.template(f"student_intro_{kind}", lang).strip("\n").format(**fields)
    work = RELEASE_TEXTS.template(f"student_work_{kind}", lang).strip("\n").format(**fields)
    return RELEASE_TEXTS.say("student_readme", lang, assignment=assignment, intro=intro, work=work)


def _write_notebooks(target: Path, assignment: str) -> bool:
    """The tutorial and trained-heads notebooks, where the exercise is the tutorial's; True when written."""
    from grader.authoring.notebooks import build_notebook, notebook_text
    from grader.authoring.tutorial import load_tutorial

    tutorial = load_tutorial()
    if tutorial.assignment != assignment:
        return False  # the tutorial notebooks exist for the core exercise only
    folder = target / "exercises" / "notebooks"
    folder.mkdir(parents=True)
    for lang in LANGUAGES:
        name = f"{assignment}.ipynb" if lang == "en" else f"{assignment}.{lang}.ipynb"
        notebook = build_notebook(lang=lang, filling="stub", tutorial=tutorial)
        (folder / name).write_text(notebook_text(notebook), encoding="utf-8")
    _write_trained_notebooks(folder, target / "grader")
    return True


def _write_trained_notebooks(folder: Path, package: Path) -> None:
    """The trained-heads notebooks: the tiny model runs on the student's own blocks there. Their training
    cell needs ``attention_backward``, another exercise's answer: the release gets the run recorded here, from
    the reference, and the notebook replays it (``grader.tinymodel.recording``)."""
    from grader.authoring import trained_notebook
    from grader.tinymodel.recording import RECORDING_FILE, write_recording

    write_recording(package / RECORDING_FILE.relative_to(PACKAGE_DIR))
    for lang in LANGUAGES:
        path = trained_notebook.notebook_path(lang)
        notebook = trained_notebook.build_notebook(lang)
        (folder / path.name).write_text(trained_notebook.notebook_text(notebook), encoding="utf-8")


def instructor_only(relative: str, assignment: str) -> bool:
    """True for a path of the grader package (``assignments/x/hidden/t.py``...) that stays with the instructor."""
    parts = relative.split("/")
    if "__pycache__" in parts or relative.endswith((".pyc", ".pyo")):
        return True
    if parts[0] == "assignments":
        if len(parts) == 2:  # the package's own modules: only its __init__ ships, the twins' engine stays
            return parts[1] != "__init__.py"
        if parts[2] in EXERCISE_TEXTS:
            return False
        return not (parts[1] == assignment and (parts[2] in RELEASED_PARTS or parts[2] in _student_modules(assignment)))
    if parts[0] in INSTRUCTOR_FOLDERS:
        return True
    return relative in INSTRUCTOR_VERBS


def _student_modules(assignment: str) -> tuple[str, ...]:
    from grader.grading.assignment import ASSIGNMENTS

    exercise = ASSIGNMENTS.get(assignment)
    return exercise.student_modules if exercise is not None else ()


def _copy_package(destination: Path, assignment: str) -> None:
    for source in sorted(PACKAGE_DIR.rglob("*")):
        relative = source.relative_to(PACKAGE_DIR).as_posix()
        if source.is_dir() or source.is_symlink() or instructor_only(relative, assignment):
            continue
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def _write_explainer(path: Path, package: Path, lang: str) -> bool:
    """The explainer page, rendered here where the reference is (students do not have it): one beside the
    README, and one per language inside the package, which ``mha demo`` copies out in the release."""
    from grader.viz.explainer import write_explainer, write_shipped_pages

    path.parent.mkdir(parents=True, exist_ok=True)
    write_explainer(out=path, lang=lang)
    write_shipped_pages(package / "viz" / "pages")
    return True


def release_pyproject(package: Path) -> str:
    """The release's ``pyproject.toml``: the project's own metadata, the files actually shipped."""
    project = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = ("jupyterlab", "ipykernel")  # enough to open and run the notebooks
    notebook = [requirement for requirement in project.get("optional-dependencies", {}).get("notebook", [])
                if requirement.split(">")[0].split("=")[0].strip() in wanted]
    data_files = sorted(path.relative_to(package).as_posix() for path in package.rglob("*")
                        if path.is_file() and path.suffix != ".py")
    suite_modules = sorted(path.relative_to(package).as_posix() for path in (package / "assignments").rglob("*.py")
                           if path.parent != package / "assignments")

    def strings(values) -> str:
        return "[\n" + "".join(f"    {json.dumps(value, ensure_ascii=False)},\n" for value in values) + "]"

    return "\n".join([
        "# The student release of mha-lab, written by `mha release --student`.",
        "[build-system]",
        'requires = ["setuptools>=68"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        'name = "mha-lab"',
        f"version = {json.dumps(project['version'])}",
        f"description = {json.dumps(project.get('description', ''), ensure_ascii=False)}",
        f"requires-python = {json.dumps(project.get('requires-python', '>=3.11'))}",
        f"dependencies = {strings(project.get('dependencies', []))}",
        "",
        "[project.optional-dependencies]",
        f"notebook = {strings(notebook)}",
        "",
        "[project.scripts]",
        'mha = "grader.warm.launcher:main"',  # a check goes to the student's warm check server
        "",
        "[project.entry-points.pytest11]",
        'mha = "grader.pytest_plugin"',
        "",
        "[tool.setuptools.packages.find]",
        'include = ["grader*"]',
        "",
        "[tool.setuptools.package-data]",
        f"grader = {strings(data_files + suite_modules)}",
        "",
    ])


# ---- the nbgrader course -------------------------------------------------------------------
def check_points(assignment: str) -> dict[tuple[str, ...], float]:
    """Points of each check cell of the course notebook: every check, public and hidden, of its functions."""
    from grader.authoring.tutorial import load_tutorial
    from grader.grading.assignment import get_assignment
    from grader.grading.runner import collect

    exercise = get_assignment(assignment)
    if not (exercise.folder / "hidden").is_dir():
        raise ConfigError(f"the hidden checks of {assignment} are not installed here; "
                          "an nbgrader course is made from the instructor's copy")
    tests = collect(exercise, ("public", "hidden"))
    groups = [cell.functions for cell in load_tutorial().cells_of("nbgrader") if cell.kind == "check"]
    points = {group: float(sum(test.points for test in tests if test.function in group)) for group in groups}
    uncovered = sorted({test.function for test in tests} - {name for group in groups for name in group})
    if uncovered:
        raise ContentError(f"layout.toml: no nbgrader check cell runs the checks of {', '.join(uncovered)}")
    return points


def build_nbgrader_course(*, course_dir: Path, assignment: str = DEFAULT_ASSIGNMENT, lang: str = "en",
                          force: bool = False) -> CourseRelease:
    """Write ``nbgrader_config.py``, ``source/<assignment>/<assignment>.ipynb`` and a README."""
    from grader.authoring.notebooks import build_notebook, check_cell_id, notebook_text
    from grader.authoring.tutorial import load_tutorial

    if load_tutorial().assignment != assignment:
        raise UsageError(f"the nbgrader notebook exists for {load_tutorial().assignment} only; got {assignment!r}")
    course_dir = Path(course_dir)
    notebook_file = course_dir / "source" / assignment / f"{assignment}.ipynb"
    if notebook_file.exists() and not force:
        raise UsageError(f"{notebook_file} already exists; add --force to write it again")
    points = check_points(assignment)
    notebook = build_notebook(lang=lang, filling="nbgrader", points=points)
    notebook_file.parent.mkdir(parents=True, exist_ok=True)
    notebook_file.write_text(notebook_text(notebook), encoding="utf-8")
    config = course_dir / "nbgrader_config.py"
    if not config.exists() or force:
        config.write_text(NBGRADER_CONFIG, encoding="utf-8")
    by_cell = {check_cell_id(group): value for group, value in points.items()}
    cells = ", ".join(f"{name} {value:g}" for name, value in by_cell.items())
    readme = RELEASE_TEXTS.say("course_readme", lang, assignment=assignment, cells=cells,
                                                                 points=sum(points.values()))
    (course_dir / "README.md").write_text(readme.strip("\n") + "\n", encoding="utf-8")
    return CourseRelease(folder=course_dir, notebook=notebook_file, points=by_cell)
