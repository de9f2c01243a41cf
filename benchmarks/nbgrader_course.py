"""A tiny nbgrader course that grades the same submissions with ``nbgrader autograde``.

The source notebook has one solution cell (the student's code goes there)
and autograded test cells that run checks equivalent to the hidden suite:
values against a reference on random inputs of distinct sizes, softmax
stability, inputs left unchanged, split/combine as inverses, the constructor's
divisibility check, cross-attention and the per-head weights.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

ASSIGNMENT = "mha"

REFERENCE_CELL = '''\
import numpy as _np
_rng = _np.random.default_rng(20240613)
def _ref_softmax(x):
    e = _np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
def _ref_attention(Q, K, V):
    w = _ref_softmax(Q @ _np.swapaxes(K, -1, -2) / _np.sqrt(Q.shape[-1]))
    return w @ V, w
def _ref_forward(Q, K, V, W, H):
    B, T, D = Q.shape
    split = lambda x: x.reshape(x.shape[0], x.shape[1], H, D // H).transpose(0, 2, 1, 3)
    out, w = _ref_attention(split(Q @ W["W_Q"]), split(K @ W["W_K"]), split(V @ W["W_V"]))
    return out.transpose(0, 2, 1, 3).reshape(B, T, D) @ W["W_O"], w
def _close(a, b):
    return isinstance(a, _np.ndarray) and a.shape == b.shape and _np.allclose(a, b, rtol=1e-4, atol=1e-6)
B, H, T, S, d_k = 2, 3, 5, 7, 4
D = H * d_k
'''

TESTS = {
    "test_softmax": (3, '''\
for shape in [(S + 2,), (T, S), (B, H, T, S)]:
    x = _rng.normal(0, 2, shape); before = x.copy()
    assert _close(softmax(x), _ref_softmax(x)), "softmax values"
    assert _np.array_equal(x, before), "softmax changed its input"
big = _np.array([[1000.0, 999.0, -1000.0], [-1200.0, -1201.5, -1199.0], [800.0, -750.0, 10.0]])
assert _close(softmax(big), _ref_softmax(big)), "softmax is not stable"
'''),
    "test_attention": (4, '''\
Q, K, V = _rng.normal(size=(B, H, T, d_k)), _rng.normal(size=(B, H, S, d_k)), _rng.normal(size=(B, H, S, d_k))
out, w = scaled_dot_product_attention(Q, K, V)
ref_out, ref_w = _ref_attention(Q, K, V)
assert _close(w, ref_w) and _close(out, ref_out), "attention values"
'''),
    "test_split_combine": (4, '''\
m = MultiHeadAttention(D, H)
x = _rng.normal(size=(B, T, D))
expected = x.reshape(B, T, H, d_k).transpose(0, 2, 1, 3)
assert _close(m.split_heads(x), expected), "split_heads"
assert _close(m.combine_heads(expected), x), "combine_heads"
y = _rng.normal(size=(B + 2, T + S, D))
assert _close(m.split_heads(y), y.reshape(B + 2, T + S, H, d_k).transpose(0, 2, 1, 3)), "split_heads sizes"
'''),
    "test_constructor": (2, '''\
try:
    MultiHeadAttention(10, 3)
except Exception:
    pass
else:
    raise AssertionError("accepted d_model=10 with 3 heads")
'''),
    "test_forward": (5, '''\
W = {name: _rng.normal(0, D ** -0.5, (D, D)) for name in ("W_Q", "W_K", "W_V", "W_O")}
m = MultiHeadAttention(D, H)
for name, value in W.items():
    setattr(m, name, value.copy())
Q, K, V = _rng.normal(size=(B, T, D)), _rng.normal(size=(B, S, D)), _rng.normal(size=(B, S, D))
before = Q.copy()
ref_out, ref_w = _ref_forward(Q, K, V, W, H)
assert _close(m.forward(Q, K, V), ref_out), "forward values"
out, w = m.forward(Q, K, V, return_weights=True)
assert _close(out, ref_out) and _close(w, ref_w), "forward weights"
assert _np.array_equal(Q, before), "forward changed its input"
'''),
}


def _cell(kind: str, source: str, metadata: dict, number: int) -> dict:
    cell = {"cell_type": kind, "id": f"cell-{number}", "metadata": metadata, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _nbgrader(grade_id: str, *, solution=False, grade=False, locked=True, points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def source_notebook(solution_code: str) -> dict:
    cells = [_cell("code", solution_code, _nbgrader("implementation", solution=True, locked=False), 0),
             _cell("code", REFERENCE_CELL, _nbgrader("reference"), 1)]
    for number, (name, (points, body)) in enumerate(TESTS.items(), start=2):
        cells.append(_cell("code", body, _nbgrader(name, grade=True, points=points), number))
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                        "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}


def build_course(folder: Path, submissions: list[Path], reference: Path) -> Path:
    """A course folder with the assignment generated and each ``.py`` submitted as a notebook."""
    folder.mkdir(parents=True)
    (folder / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(folder)!r}\nc.CourseDirectory.course_id = 'bench'\n")
    source = folder / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    solution = reference.read_text(encoding="utf-8")  # already marked: ### BEGIN SOLUTION / ### END SOLUTION
    (source / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(source_notebook(solution)))
    _run(["nbgrader", "generate_assignment", ASSIGNMENT, "--force"], folder)
    released = json.loads((folder / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    for path in submissions:
        notebook = json.loads(json.dumps(released))
        notebook["cells"][0]["source"] = path.read_text(encoding="utf-8")
        target = folder / "submitted" / path.stem / ASSIGNMENT
        target.mkdir(parents=True)
        (target / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(notebook))
    return folder


def time_autograde(folder: Path) -> float:
    """Wall-clock seconds of ``nbgrader autograde`` over every submission of the course."""
    started = time.perf_counter()
    _run(["nbgrader", "autograde", ASSIGNMENT], folder)
    return time.perf_counter() - started


def autograde_scores(folder: Path) -> dict[str, float]:
    """Each student's score from the course's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as book:
        return {submission.student_id: submission.score
                for submission in book.assignment_submissions(ASSIGNMENT)}


def _run(command: list[str], folder: Path) -> None:
    if shutil.which(command[0]) is None:
        raise RuntimeError(f"{command[0]} is not installed (pip install -e '.[dev]')")
    environment = dict(os.environ, JUPYTER_CONFIG_DIR=str(folder / ".jupyter"))
    completed = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=environment)
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{completed.stderr[-2000:]}")
