"""Dependencies point one way: exercises and solutions never import the grader;
the worker imports only the standard library and NumPy."""

import ast
import re

import pytest

from conftest import PROJECT


def imported_modules(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module.split(".")[0]


def test_exercises_and_solutions_do_not_import_grader():
    for folder in ("exercises", "solutions"):
        for path in (PROJECT / folder).rglob("*.py"):
            assert "grader" not in set(imported_modules(path)), path


def test_worker_imports_only_stdlib_and_numpy():
    import sys

    allowed = set(sys.stdlib_module_names) | {"numpy"}
    modules = set(imported_modules(PROJECT / "grader" / "sandbox" / "worker" / "worker_main.py"))
    assert modules <= allowed, modules - allowed


def test_check_does_not_import_heavy_modules_at_startup():
    import subprocess
    import sys

    code = ("import sys, grader.cli, grader.verbs.check, grader.grading.grade; "
            "print(sorted(m for m in ('matplotlib', 'nbformat', 'questionary', 'scipy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_check_imports_only_what_its_path_uses(tmp_path):
    """`mha check` on correct code and on a mistake, as a whole process: no pytest (the suites mark their
    checks without it), no XML or URL library (only JUnit export needs them), no question bank schema (the
    linked questions come from the cached index on the second run)."""
    import os
    import subprocess
    import sys

    heavy = ("pytest", "_pytest", "xml.sax.saxutils", "urllib.request", "http.client", "grader.practice.schema",
             "matplotlib", "nbformat", "scipy")
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr))\n"
            "from grader.cli import main\nmain(sys.argv[1:])\n")
    buggy = tmp_path / "multihead_attention.py"
    buggy.write_text((PROJECT / "solutions" / "multihead_attention.py").read_text(encoding="utf-8")
                     .replace("/ np.sqrt(d_k)", "", 1), encoding="utf-8")
    env = {**os.environ, "MHA_CACHE_DIR": str(tmp_path / "cache")}
    for path, status in ((PROJECT / "solutions" / "multihead_attention.py", 0), (buggy, 1)):
        for _ in range(2):  # the second run reads the caches the first one wrote
            done = subprocess.run([sys.executable, "-c", code, "check", str(path)], capture_output=True,
                                  text=True, env=env, cwd=PROJECT)
            assert done.returncode == status, done.stderr
        assert done.stderr.strip().splitlines()[-1] == "[]", (path.name, done.stderr[-500:])


# ---- the layer map of DESIGN.md: each row may import only the rows below it -------------------
LAYERS = (
    ("grader", "grader.cli", "grader.verbs", "grader.notebook", "grader.pytest_plugin", "grader.warm"),  # entry points
    ("grader.authoring", "grader.similarity"),
    ("grader.batch", "grader.viz"),
    ("grader.tinymodel",),  # computes with the core exercise's blocks: the student's own work in a release
    ("grader.entries",),  # a student's entry: the file graded, read as found (mha check, mha grade, Gradescope)
    ("grader.practice",),
    ("grader.assignments",),  # one folder per exercise; its suites are loaded by the runner by name
    ("grader.grading", "grader.render"),
    ("grader.sandbox", "grader.stubs"),
    ("grader.content",),
    ("grader.tally", "grader.seeding"),  # the class's figures, fed results one at a time; the course key and seeds
    ("grader.errors", "grader.paths", "grader.i18n", "grader.results", "grader.files"),
)


def _modules():
    """Every module of the package, but the mutant library (student code, the audit's fixtures) and the
    templates (files with placeholders, copied by the authoring tools)."""
    for path in sorted((PROJECT / "grader").rglob("*.py")):
        parts = path.relative_to(PROJECT).with_suffix("").parts
        if parts[:2] == ("grader", "assignments") and len(parts) > 3 and parts[3] == "mutants":
            continue
        if parts[:3] == ("grader", "authoring", "templates"):
            continue
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _suite(module: str) -> bool:
    """A module of an exercise's public or hidden checks (``grader.assignments.<name>.public.test_x``)."""
    parts = module.split(".")
    return parts[:2] == ["grader", "assignments"] and len(parts) > 3 and parts[3] in ("public", "hidden")


def _layer(module: str) -> tuple[int, str]:
    """(row, group) of a module: its longest matching group in LAYERS."""
    best = None
    for row, groups in enumerate(LAYERS):
        for group in groups:
            if (module == group or module.startswith(group + ".")) and (best is None or len(group) > len(best[1])):
                best = (row, group)
    assert best is not None, f"{module} is in no layer of the map"
    return best


def _without_type_checking(tree):
    """The module without its ``if TYPE_CHECKING:`` blocks (what runs: for what a release must hold)."""
    for node in ast.walk(tree):
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                setattr(node, name, [child for child in block if not (
                    isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING")])
    return tree


def _imports(path):
    """The grader modules and names ``path`` imports: at the top, in functions, and under ``TYPE_CHECKING``
    (an annotation's import is a dependency too, and the map holds it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("grader"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("grader"):
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


# ---- what each layer may import, written once: the packages' "May import" lines must say the same ----
FOUNDATION = frozenset(LAYERS[-2] + LAYERS[-1])  # imported by all; of the grader, only the row below it
EVERY = "every layer"
ALLOWED = {
    "grader": EVERY, "grader.cli": EVERY, "grader.verbs": EVERY, "grader.notebook": EVERY,
    "grader.pytest_plugin": EVERY, "grader.warm": EVERY,
    "grader.authoring": {"batch", "viz", "entries", "practice", "assignments", "grading", "render", "sandbox",
                         "stubs", "tinymodel", "content"},
    "grader.similarity": {"batch", "grading", "render", "sandbox", "content"},
    "grader.batch": {"entries", "practice", "grading", "render", "sandbox", "content"},
    "grader.viz": {"entries", "practice", "assignments", "grading", "render", "sandbox", "tinymodel", "content"},
    "grader.entries": {"practice", "grading", "render", "sandbox", "content"},
    "grader.practice": {"grading", "stubs", "content"},
    "grader.assignments": {"grading", "sandbox", "content"},
    "grader.grading": {"sandbox", "content"},
    "grader.render": {"content"},
    "grader.sandbox": {"content"},
    "grader.tinymodel": {"entries", "grading", "sandbox"},
    "grader.stubs": set(), "grader.content": set(),
    **{module: set() for module in FOUNDATION},
}
# a layer that may enter another only through these modules of it (the package's own names, and one module)
ONLY_THROUGH = {("grader.batch", "grader.practice"): ("grader.practice", "grader.practice.homework")}
_LAYER_NAME = re.compile(r"\b(" + "|".join(sorted({group.rpartition(".")[2] for row in LAYERS for group in row
                                                    if group not in FOUNDATION} | {"foundation"})) + r")\b")


def test_every_import_points_down_the_layer_map():
    known = {module for module, _ in _modules()}
    back_arrows = []
    for module, path in _modules():
        if module.startswith("grader.sandbox.worker"):
            continue  # standard library only, checked above
        row, group = _layer(module)
        for target in set(_imports(path)):
            if target not in known:
                continue  # a name imported from a module, not a module
            target_row, target_group = _layer(target)
            if target_group != group and target_row <= row and row > 0 and target != "grader":
                back_arrows.append(f"{module} -> {target}")
    assert not back_arrows, "\n".join(sorted(back_arrows))


def test_no_import_cycle():
    """No module imports itself through others (lazy imports included). The map, not a count of links,
    says how long a chain may be: a cap on its length only moved code to where the count allowed it."""
    known = {module: path for module, path in _modules()}
    graph = {module: {t for t in _imports(path) if t in known and t != module and t != "grader"}
             for module, path in known.items()}
    done: set[str] = set()

    def visit(module, stack=()):
        assert module not in stack, "import cycle: " + " -> ".join(stack + (module,))
        if module not in done:
            for target in graph[module]:
                visit(target, stack + (module,))
            done.add(module)

    for module in known:
        visit(module)
    assert len(done) == len(known)


@pytest.mark.parametrize("module", sorted(m for m, _ in _modules() if not m.startswith("grader.sandbox.worker")
                                          and not _suite(m)))
def test_every_module_imports_alone(module):
    """Like pip-tools: each module imports in a fresh interpreter, so no order of imports hides a cycle."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, cwd=PROJECT)
    assert done.returncode == 0, done.stderr[-2000:]


def test_public_suites_import_nothing_the_student_release_withholds():
    from grader.authoring.release import instructor_only

    known = dict(_modules())
    checked = 0
    for path in (PROJECT / "grader" / "assignments").glob("*/public/*.py"):
        assignment = path.parent.parent.name
        withheld = sorted(target for target in set(_imports(path)) if target in known and instructor_only(
            known[target].relative_to(PROJECT / "grader").as_posix(), assignment))
        assert withheld == [], path
        checked += 1
    assert checked >= 12


def test_the_top_of_the_package_holds_at_most_twelve_modules():
    top = sorted(path.name for path in (PROJECT / "grader").glob("*.py"))
    assert len(top) <= 12, top


def test_every_import_is_one_its_layer_may_make():
    """Lazy and TYPE_CHECKING imports included, each package imports only what ALLOWED gives it."""
    known = {module for module, _ in _modules()}
    wrong = []
    for module, path in _modules():
        if module.startswith("grader.sandbox.worker"):
            continue
        _, group = _layer(module)
        allowed = ALLOWED[group]
        for target in set(_imports(path)) & known:
            _, target_group = _layer(target)
            if target_group == group or target == "grader" or allowed == EVERY or target_group in FOUNDATION:
                continue
            if target_group.rpartition(".")[2] not in allowed:
                wrong.append(f"{module} -> {target}")
            gates = ONLY_THROUGH.get((group, target_group))
            if gates is not None and target not in gates:
                wrong.append(f"{module} -> {target} (only through {', '.join(gates)})")
    assert wrong == []


def test_the_map_sees_imports_for_annotations_and_inside_functions_but_the_release_check_skips_annotations(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import TYPE_CHECKING\n"
                      "if TYPE_CHECKING:\n    from grader.batch.settings import QuizPolicy\n"
                      "def later():\n    import grader.viz.draw\n", encoding="utf-8")
    assert {"grader.batch.settings", "grader.viz.draw"} <= set(_imports(sample))
    assert "grader.batch.settings" not in set(_all_imports(sample)) and "grader.viz.draw" in set(_all_imports(sample))


def test_every_group_of_the_map_says_what_it_may_import():
    assert set(ALLOWED) == {group for row in LAYERS for group in row}


@pytest.mark.parametrize("package", sorted(group for group in ALLOWED if (PROJECT / group.replace(".", "/")).is_dir()
                                           and group != "grader"))
def test_each_package_docstring_says_what_the_map_allows(package):
    """The "May import" sentence of each package's docstring names exactly the layers ALLOWED gives it."""
    init = PROJECT / package.replace(".", "/") / "__init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    said = re.search(r"May import(.*?)(?:\.\s|\.$|;)", docstring, re.S)
    assert said, f"{init}: no 'May import' sentence"
    allowed = ALLOWED[package]
    if allowed == EVERY:
        assert "every layer" in said.group(1), init
        return
    named = set(_LAYER_NAME.findall(said.group(1))) - {package.rpartition(".")[2]}
    assert named - {"foundation"} == allowed, init


# ---- what ships in the student release: no shipped module imports a withheld one ---------------
def _all_imports(path):
    """Every grader module ``path`` imports anywhere: at the top, inside functions, under try or if
    (imports for annotations only, under ``if TYPE_CHECKING:``, never run)."""
    tree = _without_type_checking(ast.parse(path.read_text(encoding="utf-8")))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("grader"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("grader"):
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("grader")):
            yield node.args[0].value  # importlib.import_module("grader....") spelled out


def shipped(module: str, path) -> bool:
    from grader.authoring.release import instructor_only

    relative = path.relative_to(PROJECT / "grader").as_posix()
    return not instructor_only(relative, "multihead_attention")


def test_the_student_release_ships_the_entry_points_and_withholds_the_instructors_layers():
    modules = {module for module, path in _modules() if shipped(module, path)}
    assert {"grader.cli", "grader.verbs.check", "grader.viz.draw", "grader.grading.reference",
            "grader.notebook", "grader.assignments.multihead_attention.public"} <= {m.rsplit(".test_", 1)[0] for m in modules}
    assert not {m for m in modules if m.startswith(("grader.batch", "grader.authoring", "grader.assignments.twinning"))
                or m.endswith(".cases") or ".hidden" in m or ".mutants" in m}
    assert "grader.verbs.grade" not in modules and "grader.verbs.release" not in modules


def test_no_shipped_module_imports_a_withheld_one_lazily_or_not():
    """A withheld part's absence is handled where it is used, never by importing it and catching the error."""
    modules = dict(_modules())
    withheld = {module for module, path in modules.items() if not shipped(module, path)}
    found = []
    for module, path in modules.items():
        if module in withheld:
            continue
        for target in set(_all_imports(path)):
            if target in withheld or any(target.startswith(name + ".") for name in withheld):
                found.append(f"{module} -> {target}")
    assert not found, "\n".join(sorted(found))
