"""Dependencies point one way: exercises and solutions never import the grader;
the worker imports only the standard library and NumPy."""

import ast

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
