"""Reading submissions: notebooks, magics, nbgrader test cells, bad files."""

import json

import pytest

from conftest import PROJECT
from grader.grading.grade import grade_submission
from grader.sandbox.source import SubmissionError, read_submission


def notebook(cells):
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": kind, "metadata": metadata, "source": source, **({"outputs": [], "execution_count": None}
                                                                       if kind == "code" else {})}
        for kind, source, metadata in cells]})


def test_notebook_drops_magics_and_test_cells_and_grades_like_the_script(tmp_path):
    reference = (PROJECT / "solutions" / "multihead_attention.py").read_text()
    path = tmp_path / "nb.ipynb"
    path.write_text(notebook([
        ("markdown", "# My work", {}),
        ("code", "%matplotlib inline\n!pip install nothing\nimport numpy as np", {}),
        ("code", "%%timeit\nx = 1", {}),
        ("code", reference, {"nbgrader": {"solution": True, "grade": False}}),
        ("code", "assert False, 'an nbgrader test cell'", {"nbgrader": {"grade": True, "solution": False,
                                                                           "points": 1}}),
        ("code", "raise RuntimeError('a cell that fails')", {}),
    ]))
    source = read_submission(path)
    assert source.mode == "cells" and len(source.cells) == 3
    notes = [note.render("en") for note in source.notes]
    assert any("%matplotlib" in note for note in notes) and any("cell magic" in note for note in notes)
    assert any("魔法命令" in note.render("zh") for note in source.notes)
    result = grade_submission(path=path)
    script = grade_submission(path=PROJECT / "solutions" / "multihead_attention.py")
    assert result.score == script.score == result.max_score
    assert any("RuntimeError" in note for note in result.notes)


@pytest.mark.parametrize("name,content,reason", [
    ("empty.py", b"", "empty"),
    ("binary.py", b"\x00\x01\x02", "binary"),
    ("latin.py", "x = 'é'".encode("latin-1"), "UTF-8"),
    ("broken.ipynb", b"{not json", "not a valid notebook"),
    ("nocells.ipynb", b'{"cells": 3}', "no list of cells"),
    ("notes.txt", b"hello", "expected a .py file"),
])
def test_bad_files_get_a_clear_error(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(SubmissionError, match=reason):
        read_submission(path)
    result = grade_submission(path=path)
    assert result.status == "error" and reason in result.error and result.tests == ()
    chinese = grade_submission(path=path, lang="zh")
    assert chinese.status == "error" and any("\u4e00" <= character <= "\u9fff" for character in chinese.error)


def test_symlink_is_refused(tmp_path):
    link = tmp_path / "alice.py"
    link.symlink_to(PROJECT / "solutions" / "multihead_attention.py")
    result = grade_submission(path=link)
    assert result.status == "error" and "symbolic link" in result.error
