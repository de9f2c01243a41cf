"""The tutorial notebook's content: its cell layout and its texts in each language.

Data lives in the core exercise's folder, ``grader/assignments/<name>/tutorial/``: ``layout.toml`` orders the cells,
``en.toml`` and ``zh.toml`` hold the Markdown, the demonstration code and a
few phrases. Every other exercise may add its section to the notebook: its
folder's ``tutorial/section.toml`` holds the section's cells and their texts
in both languages, placed where the layout has its ``sections`` cell, in
curriculum order. ``grader.authoring.notebooks`` turns them into notebooks. Any problem is a
ContentError naming the file and the key.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from grader.content.loader import load_toml
from grader.errors import ContentError
from grader.i18n import LANGUAGES
from grader.paths import ASSIGNMENTS_DIR, DEFAULT_ASSIGNMENT

TUTORIAL_DIR = ASSIGNMENTS_DIR / DEFAULT_ASSIGNMENT / "tutorial"
LAYOUT_FILE = TUTORIAL_DIR / "layout.toml"
KINDS = ("text", "code", "imports", "stub", "check", "heads", "sections")
SECTION_FILE = "section.toml"  # in another exercise's ``tutorial/`` folder
SECTION_KINDS = ("text", "code")
TRACKS = ("tutorial", "nbgrader")
PHRASES = ("notebook_title", "extends_class", "heads_sentence")


@dataclass(frozen=True)
class LayoutCell:
    kind: str
    id: str = ""  # the text or code key, for "text" and "code"
    parts: tuple[str, ...] = ()  # the reference parts of a "stub" cell
    functions: tuple[str, ...] = ()  # for "check"; empty means every function
    tracks: tuple[str, ...] = TRACKS


@dataclass(frozen=True)
class Tutorial:
    assignment: str
    cells: tuple[LayoutCell, ...]
    texts: dict  # lang -> {"text": {id: str}, "code": {id: str}, "phrase": {key: str}}

    def cells_of(self, track: str) -> tuple[LayoutCell, ...]:
        return tuple(cell for cell in self.cells if track in cell.tracks)

    def text(self, lang: str, id: str) -> str:
        return self.texts[lang]["text"][id].strip("\n")

    def code(self, lang: str, id: str) -> str:
        return self.texts[lang]["code"][id].strip("\n")

    def phrase(self, lang: str, key: str, **params) -> str:
        return self.texts[lang]["phrase"][key].format(**params)


@functools.cache
def load_tutorial(folder: Path = TUTORIAL_DIR) -> Tutorial:
    """The layout and both languages' texts, checked against each other."""
    layout_file = folder / LAYOUT_FILE.name
    layout = load_toml(layout_file)
    _expect_schema(layout, layout_file)
    assignment = layout.get("assignment")
    if not isinstance(assignment, str) or not assignment:
        raise ContentError(f"{layout_file}: key 'assignment' must name the exercise")
    cells = tuple(_layout_cell(raw, f"{layout_file}: [[cell]] #{number}")
                  for number, raw in enumerate(layout.get("cell", []), start=1))
    if not cells:
        raise ContentError(f"{layout_file}: no [[cell]] entries")
    texts = {lang: _language(folder / f"{lang}.toml", lang) for lang in LANGUAGES}
    cells = _with_sections(cells, texts, assignment)
    for track in TRACKS:
        checks = [cell.functions for cell in cells if cell.kind == "check" and track in cell.tracks]
        if len(set(checks)) != len(checks):
            raise ContentError(f"{layout_file}: two check cells of the {track} track check the same functions")
    for lang, tables in texts.items():
        for cell in cells:
            if cell.kind in ("text", "code") and cell.id not in tables[cell.kind]:
                raise ContentError(f"{folder / f'{lang}.toml'}: missing key '{cell.kind}.{cell.id}' "
                                   f"(used by {layout_file.name})")
    for table in ("text", "code"):
        keys = {lang: set(tables[table]) for lang, tables in texts.items()}
        if len({frozenset(value) for value in keys.values()}) > 1:
            differ = sorted(set.union(*keys.values()) - set.intersection(*keys.values()))
            raise ContentError(f"{folder}: [{table}] keys differ between languages: {', '.join(differ)}")
    return Tutorial(assignment=assignment, cells=cells, texts=texts)


def section_files(assignment: str) -> list[Path]:
    """The other exercises' notebook sections, in curriculum order."""
    from grader.grading.assignment import ASSIGNMENTS

    return [exercise.folder / "tutorial" / SECTION_FILE for exercise in ASSIGNMENTS.values()
            if exercise.name != assignment and (exercise.folder / "tutorial" / SECTION_FILE).is_file()]


def _with_sections(cells: tuple[LayoutCell, ...], texts: dict, assignment: str) -> tuple[LayoutCell, ...]:
    """The layout with its ``sections`` cell replaced by every section's cells; their texts join ``texts``."""
    if not any(cell.kind == "sections" for cell in cells):
        return cells
    added: list[LayoutCell] = []
    for path in section_files(assignment):
        data = load_toml(path)
        _expect_schema(data, path)
        for number, raw in enumerate(data.get("cell", []), start=1):
            cell = _layout_cell({"tracks": ["tutorial"], **raw}, f"{path}: [[cell]] #{number}")
            if cell.kind not in SECTION_KINDS:
                raise ContentError(f"{path}: [[cell]] #{number}: a section holds {' and '.join(SECTION_KINDS)} cells")
            for lang in LANGUAGES:
                text = data.get(cell.kind, {}).get(cell.id, {}).get(lang)
                if not isinstance(text, str) or not text.strip():
                    raise ContentError(f"{path}: missing key '{cell.kind}.{cell.id}.{lang}'")
                if cell.id in texts[lang][cell.kind]:
                    raise ContentError(f"{path}: '{cell.kind}.{cell.id}' is already a key of the notebook")
                texts[lang][cell.kind] = {**texts[lang][cell.kind], cell.id: text}
            added.append(cell)
    expanded: list[LayoutCell] = []
    for cell in cells:
        expanded.extend(added if cell.kind == "sections" else (cell,))
    return tuple(expanded)


def _expect_schema(data: dict, path: Path) -> None:
    if data.get("schema_version") != 1:
        raise ContentError(f"{path}: schema_version must be 1, found {data.get('schema_version')!r}")


def _layout_cell(raw: dict, where: str) -> LayoutCell:
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ContentError(f"{where}: key 'kind' must be one of {', '.join(KINDS)}; found {kind!r}")
    tracks = tuple(raw.get("tracks", TRACKS))
    if not tracks or any(track not in TRACKS for track in tracks):
        raise ContentError(f"{where}: key 'tracks' must list some of {', '.join(TRACKS)}; found {tracks!r}")
    text_id, parts, functions = raw.get("id", ""), raw.get("parts", []), raw.get("functions", [])
    if kind in ("text", "code") and not (isinstance(text_id, str) and text_id):
        raise ContentError(f"{where}: a {kind} cell needs key 'id'")
    if kind == "stub" and not (isinstance(parts, list) and parts and all(isinstance(p, str) for p in parts)):
        raise ContentError(f"{where}: a stub cell needs key 'parts', a list of reference parts")
    if kind == "check" and not (isinstance(functions, list) and all(isinstance(f, str) for f in functions)):
        raise ContentError(f"{where}: key 'functions' must be a list of function names")
    return LayoutCell(kind=kind, id=text_id, parts=tuple(parts), functions=tuple(functions), tracks=tracks)


def _language(path: Path, lang: str) -> dict:
    data = load_toml(path)
    _expect_schema(data, path)
    if data.get("language") != lang:
        raise ContentError(f"{path}: key 'language' must be {lang!r}")
    tables = {}
    for table in ("text", "code", "phrase"):
        values = data.get(table)
        if not isinstance(values, dict):
            raise ContentError(f"{path}: missing table [{table}]")
        for key, value in values.items():
            if not isinstance(value, str) or not value.strip():
                raise ContentError(f"{path}: key '{table}.{key}' must be non-empty text")
        tables[table] = values
    missing = [key for key in PHRASES if key not in tables["phrase"]]
    if missing:
        raise ContentError(f"{path}: missing key 'phrase.{missing[0]}'")
    return tables
