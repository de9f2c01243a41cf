"""Generate the exercise notebooks from one source: the tutorial content and the reference.

The prose comes from the core exercise's ``tutorial/`` folder (``grader.authoring.tutorial``); every
code cell the student fills in is cut, function by function, out of
``solutions/<assignment>.py`` and stubbed with ``grader.stubs`` exactly like
the script exercise, so the notebooks cannot drift from the solutions (a test
regenerates them and compares). Three fillings of the same layout:

- ``stub``: the student's notebook (``exercises/notebooks/``);
- ``solution``: the same notebook with the reference filled in (for tests);
- ``nbgrader``: an nbgrader source notebook, solution regions between
  nbgrader's own ``### BEGIN SOLUTION`` markers and autograded test cells
  with points.

Cells that call the grader (checks, heatmaps) carry nbgrader test-cell
metadata (locked): graders never run them as part of a submission, and
nbgrader keeps them read-only. Run ``python -m grader.authoring.notebooks`` to rewrite
the notebooks after editing the content or the reference.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from grader.authoring.tutorial import LayoutCell, Tutorial, load_tutorial
from grader.errors import ConfigError, ContentError
from grader.paths import DEFAULT_ASSIGNMENT, exercises_dir, solution_path
from grader.stubs import BEGIN, DEF, END, HINT, HINT_LABELS, generate_stub, strip_markers

FILLINGS = ("stub", "solution", "nbgrader")
NBGRADER_SCHEMA = 3
_CELL_ID = re.compile(r"[^A-Za-z0-9_-]+")


def notebook_path(lang: str, assignment: str = DEFAULT_ASSIGNMENT) -> Path:
    """Where the student's notebook in ``lang`` lives."""
    suffix = "" if lang == "en" else f".{lang}"
    return exercises_dir() / "notebooks" / f"{assignment}{suffix}.ipynb"


# ---- the reference, cut into parts --------------------------------------------------------
def reference_parts(source: str, *, origin: str = "<reference>") -> dict[str, str]:
    """The reference's code by part name.

    ``imports`` (the module's imports), each function by name, each class by
    name with its docstring and constructor, and each further method as
    ``Class.method`` (indented, as in the class; see ``stub_cell_code``).
    """
    lines = source.splitlines()
    tree = ast.parse(source, filename=origin)

    def end(node) -> int:
        """The node's last line, counting trailing comments of its body (``### END SOLUTION``)."""
        last = node.end_lineno
        while last < len(lines) and lines[last].strip().startswith("#") \
                and len(lines[last]) - len(lines[last].lstrip()) > node.col_offset:
            last += 1
        return last

    def span(node) -> list[str]:
        first = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
        return lines[first - 1:end(node)]

    parts: dict[str, str] = {}
    imports: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.extend(span(node))
        elif isinstance(node, ast.FunctionDef):
            parts[node.name] = "\n".join(span(node)) + "\n"
        elif isinstance(node, ast.ClassDef):
            methods = [item for item in node.body if isinstance(item, ast.FunctionDef)]
            if not methods or methods[0].name != "__init__":
                raise ContentError(f"{origin}: class {node.name} must define __init__ before its other methods")
            parts[node.name] = "\n".join(lines[node.lineno - 1:end(methods[0])]) + "\n"
            for method in methods[1:]:
                parts[f"{node.name}.{method.name}"] = "\n".join(span(method)) + "\n"
    parts["imports"] = "\n".join(imports) + "\n"
    return parts


def stub_cell_code(names: tuple[str, ...], parts: dict[str, str], filling: str, *, origin: str) -> str:
    """The code of one exercise cell: functions, the class, or methods added to the class.

    Methods are wrapped in ``class C(C):``, a new class with everything the
    class defined so far had, plus these methods; so each method can follow
    its explanation and the cell still compiles on its own.
    """
    missing = [name for name in names if name not in parts]
    if missing:
        raise ContentError(f"layout.toml: the reference has no part {missing[0]!r}; "
                           f"known parts: {', '.join(sorted(parts))}")
    methods = [name for name in names if "." in name]
    classes = {name.split(".")[0] for name in methods}
    if methods and (len(methods) != len(names) or len(classes) > 1):
        raise ContentError(f"layout.toml: parts {list(names)} mix methods of several classes or other parts")
    text = "\n\n".join(parts[name].rstrip("\n") for name in names) + "\n"
    if classes:
        owner = classes.pop()
        text = f"class {owner}({owner}):\n{text}"
    return part_code(text, filling, origin=f"{origin}:{'+'.join(names)}").rstrip("\n")


def part_code(text: str, filling: str, *, origin: str) -> str:
    """A part as the student's stub, as the plain solution, or as an nbgrader solution cell."""
    if filling == "stub":
        return generate_stub(text, origin=origin)
    if filling == "solution":
        return strip_markers(text)
    return nbgrader_solution(text)


def nbgrader_solution(text: str) -> str:
    """Solution blocks for nbgrader: hints move above the region, a raise follows it.

    nbgrader replaces the region by its code stub (configured as a comment),
    so what the student sees is the hint, the stub and ``raise
    NotImplementedError``, as in the script's stub; in a constructor nothing
    follows the region, so the object can still be built.
    """
    output: list[str] = []
    block: list[str] | None = None
    function = None
    for line in text.splitlines():
        match = DEF.match(line)
        if block is None and match:
            function = match.group(1)
        stripped = line.strip()
        if stripped == BEGIN:
            block, indent = [], line[: len(line) - len(line.lstrip())]
            continue
        if stripped == END and block is not None:
            hints = [(hint.group(1), hint.group(2).strip()) for hint in map(HINT.search, block) if hint]
            output.extend(f"{indent}# {HINT_LABELS[lang]}{hint}" for lang, hint in hints)
            output.append(f"{indent}{BEGIN}")
            output.extend(line for line in block if not HINT.search(line))
            output.append(f"{indent}{END}")
            if function != "__init__":
                output.append(f'{indent}raise NotImplementedError("{function}: not implemented yet / 尚未实现")')
            block = None
            continue
        (output if block is None else block).append(line)
    return "\n".join(output) + "\n"


# ---- cells --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CellSpec:
    """One generated cell before it becomes nbformat: kind, source, id and nbgrader metadata."""

    cell_type: str  # "markdown" or "code"
    source: str
    id: str
    nbgrader: dict | None = None


def check_call(functions: tuple[str, ...], lang: str) -> str:
    arguments = [f'"{name}"' for name in functions] + ([f'lang="{lang}"'] if lang != "en" else [])
    return f"check({', '.join(arguments)})"


def cell_specs(tutorial: Tutorial, *, lang: str, filling: str, parts: dict[str, str],
               points: dict[tuple[str, ...], float] | None = None, origin: str = "<reference>") -> list[CellSpec]:
    """The cells of one notebook: ``filling`` picks the tutorial or the nbgrader track."""
    track = "nbgrader" if filling == "nbgrader" else "tutorial"
    specs: list[CellSpec] = []
    taken: set[str] = set()

    def identifier(*words: str) -> str:
        base = _CELL_ID.sub("-", "-".join(word for word in words if word)).strip("-")[:60] or "cell"
        name, number = base, 2
        while name in taken:
            name, number = f"{base}-{number}", number + 1
        taken.add(name)
        return name

    for cell in tutorial.cells_of(track):
        specs.append(_spec(cell, tutorial, lang=lang, filling=filling, parts=parts, points=points or {},
                           identifier=identifier, origin=origin))
    return specs


def _spec(cell: LayoutCell, tutorial: Tutorial, *, lang, filling, parts, points, identifier, origin) -> CellSpec:
    if cell.kind == "text":
        return CellSpec("markdown", tutorial.text(lang, cell.id), identifier("text", cell.id))
    if cell.kind == "code":
        return CellSpec("code", tutorial.code(lang, cell.id), identifier("demo", cell.id))
    if cell.kind == "imports":
        return CellSpec("code", parts["imports"].rstrip("\n"), identifier("imports"))
    if cell.kind == "stub":
        code = stub_cell_code(cell.parts, parts, filling, origin=origin)
        classes = {name.split(".")[0] for name in cell.parts if "." in name}
        if classes:
            methods = ", ".join(name.split(".")[1] for name in cell.parts)
            code = f"# {tutorial.phrase(lang, 'extends_class', methods=methods)}\n{code}"
        cell_id = identifier("exercise", *(name.split(".")[-1].strip("_") for name in cell.parts))
        metadata = None
        if filling == "nbgrader":
            metadata = {"grade": False, "solution": True, "locked": False, "grade_id": cell_id,
                        "schema_version": NBGRADER_SCHEMA}
        return CellSpec("code", code, cell_id, metadata)
    if cell.kind == "heads":
        sentence = tutorial.phrase(lang, "heads_sentence")
        language = f', lang="{lang}"' if lang != "en" else ""
        source = f'from grader.notebook import show_heads\nshow_heads("{sentence}", heads=4{language})'
        cell_id = identifier("heatmaps")
        return CellSpec("code", source, cell_id, _test_metadata(cell_id, 0.0))
    # a check cell
    cell_id = identifier(check_cell_id(cell.functions))
    if filling != "nbgrader":
        source = f"from grader import check\n{check_call(cell.functions, lang)}"
        return CellSpec("code", source, cell_id, _test_metadata(cell_id, 0.0))
    return CellSpec("code", autograde_source(cell.functions, lang), cell_id,
                    _test_metadata(cell_id, points.get(cell.functions, 0.0)))


def check_cell_id(functions: tuple[str, ...]) -> str:
    """The cell id (and nbgrader grade id) of the check of ``functions``: ``check-split_heads-combine_heads``."""
    words = ["check", *(name.strip("_") for name in functions)] if functions else ["check", "all"]
    return _CELL_ID.sub("-", "-".join(words))[:64]


def autograde_source(functions: tuple[str, ...], lang: str) -> str:
    """An nbgrader test cell: public checks for the student, hidden ones too when autograded."""
    arguments = ", ".join([f'"{name}"' for name in functions] + ["visibility=visibility"]
                          + ([f'lang="{lang}"'] if lang != "en" else []))
    return "\n".join([
        "from grader.notebook import autograde",
        "",
        'visibility = "public"',
        "### BEGIN HIDDEN TESTS",
        'visibility = "all"  # grading also runs the hidden checks, on inputs drawn for this student',
        "### END HIDDEN TESTS",
        f"autograde({arguments})",
    ])


def _test_metadata(cell_id: str, points: float) -> dict:
    return {"grade": True, "solution": False, "locked": True, "points": points, "grade_id": cell_id,
            "schema_version": NBGRADER_SCHEMA}


# ---- notebooks ----------------------------------------------------------------------------
def build_notebook(*, lang: str, filling: str = "stub", tutorial: Tutorial | None = None,
                   reference: Path | None = None, points: dict[tuple[str, ...], float] | None = None):
    """The notebook (an ``nbformat.NotebookNode``) in ``lang`` with the given filling."""
    import nbformat

    if filling not in FILLINGS:
        raise ValueError(f"filling must be one of {FILLINGS}; got {filling!r}")
    tutorial = tutorial or load_tutorial()
    reference = reference or solution_path(tutorial.assignment)
    if reference is None:
        raise ConfigError(f"the notebooks are generated from solutions/{tutorial.assignment}.py, "
                          "which is not installed here (set MHA_SOLUTIONS to its folder)")
    parts = reference_parts(reference.read_text(encoding="utf-8"), origin=str(reference))
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "title": tutorial.phrase(lang, "notebook_title"),
    }
    for spec in cell_specs(tutorial, lang=lang, filling=filling, parts=parts, points=points,
                           origin=reference.name):
        make = nbformat.v4.new_markdown_cell if spec.cell_type == "markdown" else nbformat.v4.new_code_cell
        cell = make(spec.source, id=spec.id)
        if spec.nbgrader is not None:
            cell.metadata["nbgrader"] = dict(spec.nbgrader, cell_type=spec.cell_type)
        notebook.cells.append(cell)
    nbformat.validate(notebook)
    return notebook


def notebook_text(notebook) -> str:
    """The notebook's file content: stable key order, one-space indent, final newline."""
    import nbformat

    return nbformat.writes(notebook) + "\n"


def write_notebooks(*, languages: tuple[str, ...] = ("en", "zh")) -> list[Path]:
    """Write the student notebooks; return the paths whose content changed."""
    tutorial = load_tutorial()
    return write_changed({notebook_path(lang, tutorial.assignment):
                          notebook_text(build_notebook(lang=lang, filling="stub", tutorial=tutorial))
                          for lang in languages})


def write_changed(files: dict[Path, str]) -> list[Path]:
    """Write each of ``files`` (path: text) whose content differs from what is there; the paths written."""
    changed = []
    for path, text in files.items():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    return changed


if __name__ == "__main__":
    for written in write_notebooks():
        print(f"wrote {written}")
