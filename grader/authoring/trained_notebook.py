"""Generate the trained-heads notebooks (English and Chinese) from their content files.

``grader/content/trained_heads/``: ``layout.toml`` orders the cells (Markdown
``text`` and demonstration ``code``), ``en.toml`` and ``zh.toml`` hold them.
The notebooks walk a student through training the project's tiny
transformer, watching its previous-token and induction heads form, and
ablating heads. They have no exercise cells: nothing in them is graded.
Run ``python -m grader.authoring.trained_notebook`` after editing the content;
a test regenerates the notebooks and compares.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from grader.authoring.notebooks import notebook_text, write_changed  # the file as the tutorial's is written
from grader.content.loader import load_toml
from grader.errors import ContentError
from grader.i18n import LANGUAGES
from grader.paths import CONTENT_DIR, exercises_dir

CONTENT_FOLDER = CONTENT_DIR / "trained_heads"
NOTEBOOK_NAME = "trained_heads"
KINDS = ("text", "code")
BACKWARD_TOKEN = "@BACKWARD_EXERCISE@"  # in the texts: the exercise training takes attention_backward from


@dataclass(frozen=True)
class NotebookContent:
    cells: tuple[tuple[str, str], ...]  # (kind, id) in order
    texts: dict  # lang -> {"title": str, "text": {id: str}, "code": {id: str}}


def notebook_path(lang: str) -> Path:
    """Where the trained-heads notebook in ``lang`` lives."""
    suffix = "" if lang == "en" else f".{lang}"
    return exercises_dir() / "notebooks" / f"{NOTEBOOK_NAME}{suffix}.ipynb"


@functools.cache
def load_content(folder: Path = CONTENT_FOLDER) -> NotebookContent:
    """The layout and both languages' texts; ContentError naming the file and key on any problem."""
    layout_file = folder / "layout.toml"
    layout = load_toml(layout_file)
    _expect_schema(layout, layout_file)
    cells = []
    for number, raw in enumerate(layout.get("cell", []), start=1):
        kind, cell_id = raw.get("kind"), raw.get("id")
        if kind not in KINDS or not isinstance(cell_id, str) or not cell_id:
            raise ContentError(f"{layout_file}: [[cell]] #{number} needs kind (text or code) and id")
        cells.append((kind, cell_id))
    if not cells:
        raise ContentError(f"{layout_file}: no [[cell]] entries")
    texts = {}
    for lang in LANGUAGES:
        path = folder / f"{lang}.toml"
        data = load_toml(path)
        _expect_schema(data, path)
        title = data.get("title")
        if not isinstance(title, str) or not title.strip():
            raise ContentError(f"{path}: key 'title' must be non-empty text")
        tables = {"title": title}
        for kind in KINDS:
            table = data.get(kind, {})
            wanted = [cell_id for cell_kind, cell_id in cells if cell_kind == kind]
            for cell_id in wanted:
                value = table.get(cell_id)
                if not isinstance(value, str) or not value.strip():
                    raise ContentError(f"{path}: missing key '{kind}.{cell_id}' (used by layout.toml)")
            unused = sorted(set(table) - set(wanted))
            if unused:
                raise ContentError(f"{path}: key '{kind}.{unused[0]}' is not in layout.toml")
            tables[kind] = table
        texts[lang] = tables
    return NotebookContent(cells=tuple(cells), texts=texts)


def _expect_schema(data: dict, path: Path) -> None:
    if data.get("schema_version") != 1:
        raise ContentError(f"{path}: schema_version must be 1, found {data.get('schema_version')!r}")


def build_notebook(lang: str, content: NotebookContent | None = None):
    """The notebook (an ``nbformat.NotebookNode``) in ``lang``."""
    import nbformat

    from grader.tinymodel.train import BACKWARD_EXERCISE

    content = content or load_content()
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "title": content.texts[lang]["title"],
    }
    for kind, cell_id in content.cells:
        source = content.texts[lang][kind][cell_id].strip("\n").replace(BACKWARD_TOKEN, BACKWARD_EXERCISE)
        if kind == "text":
            notebook.cells.append(nbformat.v4.new_markdown_cell(source, id=f"text-{cell_id}"))
        else:
            notebook.cells.append(nbformat.v4.new_code_cell(source, id=f"demo-{cell_id}"))
    nbformat.validate(notebook)
    return notebook


def write_notebooks(*, languages: tuple[str, ...] = LANGUAGES) -> list[Path]:
    """Write both notebooks; return the paths whose content changed."""
    return write_changed({notebook_path(lang): notebook_text(build_notebook(lang)) for lang in languages})


if __name__ == "__main__":
    for written in write_notebooks():
        print(f"wrote {written}")
