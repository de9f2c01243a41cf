"""Every path of the project that a README, a doc, a help text or a student-facing text names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import PROJECT
from grader.cli import VERBS, root

ROOTS = ("grader", "exercises", "solutions", "docs", "tests", "benchmarks", "examples")
RELEASE_ROOTS = ("grader", "exercises", "demos")  # the top folders of a student release
EXERCISES = sorted(path.parent.name for path in (PROJECT / "grader" / "assignments").glob("*/exercise.toml"))


def _named(roots: tuple[str, ...]) -> re.Pattern:
    """A path under one of ``roots``, then names; `<name>` is any one name, `*` a glob."""
    return re.compile(r"(?<![\w./-])((?:%s)/[\w.<>*/-]*)" % "|".join(roots))


NAMED = _named(ROOTS)


def named_paths(text: str, pattern: re.Pattern = NAMED) -> set[str]:
    """The paths ``text`` names, as written (a sentence's full stop dropped)."""
    found = set()
    for match in pattern.finditer(text):
        path = match.group(1).rstrip(".,;:")
        if path.endswith(("/.", "/..")) or "//" in path:
            continue
        found.add(path)
    return found


def exists(path: str, base: Path) -> bool:
    """True when ``path`` (``<name>`` and ``*`` standing for any one name) names something under ``base``."""
    pattern = re.sub(r"<[\w-]+>", "*", path.rstrip("/"))
    if "*" in pattern:
        return any(base.glob(pattern))
    return (base / pattern).exists()


def help_texts() -> dict[str, str]:
    runner = CliRunner()
    texts = {"mha --help": runner.invoke(root, ["--help"], terminal_width=200).output}
    for verb in VERBS:
        texts[f"mha {verb} --help"] = runner.invoke(root, [verb, "--help"], terminal_width=200).output
    return texts


def documents() -> dict[str, str]:
    files = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md")), PROJECT / "benchmarks" / "README.md",
             *sorted((PROJECT / "grader" / "content").rglob("*.toml"))]
    return {path.relative_to(PROJECT).as_posix(): path.read_text(encoding="utf-8") for path in files if path.is_file()}


def test_the_scan_finds_paths_and_judges_them():
    text = "See `grader/viz/embedding.py`, grader/assignments/<name>/public and docs/nothing_here.md. Not xgrader/a.py."
    assert named_paths(text) == {"grader/viz/embedding.py", "grader/assignments/<name>/public", "docs/nothing_here.md"}
    assert exists("grader/viz/embedding.py", PROJECT) and exists("grader/assignments/<name>/public", PROJECT)
    assert not exists("docs/nothing_here.md", PROJECT) and not exists("grader/embedding.py", PROJECT)


@pytest.mark.parametrize("source", sorted(documents()))
def test_every_path_a_document_names_exists(source):
    missing = sorted(path for path in named_paths(documents()[source]) if not exists(path, PROJECT))
    assert not missing, f"{source} names paths that do not exist: {missing}"


def test_every_path_a_help_text_names_exists():
    missing = {name: sorted(path for path in named_paths(text) if not exists(path, PROJECT))
               for name, text in help_texts().items()}
    assert not {name: paths for name, paths in missing.items() if paths}


@pytest.mark.parametrize("assignment", EXERCISES)
def test_every_path_a_release_readme_names_exists_in_that_release(assignment, tmp_path):
    """Each exercise's student release, in each language: the paths its README names are in it."""
    from grader.authoring.release import build_student_release

    missing = {}
    for lang in ("en", "zh"):
        folder = build_student_release(target=tmp_path / lang, assignment=assignment, lang=lang, archive=False).folder
        named = named_paths((folder / "README.md").read_text(encoding="utf-8"), _named(RELEASE_ROOTS))
        assert lang == "zh" or f"exercises/{assignment}.py" in named
        missing[lang] = sorted(path for path in named if not exists(path, folder))
    assert missing == {"en": [], "zh": []}
