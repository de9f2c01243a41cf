"""A file that only looks its inputs up in the shipped public fixtures earns nothing in a graded run."""

import hashlib
import json
import subprocess
import sys

import numpy as np

from conftest import PROJECT
from grader.grading.assignment import get_assignment

ZEROS = '''
import numpy as np

def softmax(x):
    return np.zeros_like(x)

def scaled_dot_product_attention(Q, K, V):
    return np.zeros(Q.shape), np.zeros(Q.shape[:-1] + (K.shape[-2],))

class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("heads must divide d_model")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, D = x.shape
        return np.zeros((B, self.num_heads, T, self.d_k))

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return np.zeros((B, T, H * d_k))

    def forward(self, Q, K, V, return_weights=False):
        out = np.zeros(Q.shape)
        weights = np.zeros((Q.shape[0], self.num_heads, Q.shape[1], K.shape[1]))
        return (out, weights) if return_weights else out
'''


def _lookup_table_source() -> str:
    """A submission that answers every shipped public input from a table and returns zeros otherwise."""
    table = {}
    for case in get_assignment("multihead_attention").public_cases().values():
        key = hashlib.sha256(b"".join(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in case.args
                                      if isinstance(a, np.ndarray))).hexdigest()
        expected = case.expected if isinstance(case.expected, tuple) else (case.expected,)
        table[key] = [[item.tolist(), list(item.shape)] for item in expected]
    lookup = f'''
import hashlib, json
TABLE = json.loads({json.dumps(json.dumps(table))})

def _answer(*arrays, count=1):
    key = hashlib.sha256(b"".join(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in arrays)).hexdigest()
    if key not in TABLE:
        return None
    items = [np.array(values).reshape(shape) for values, shape in TABLE[key]]
    return items[0] if len(items) == 1 else tuple(items)

_zeros_softmax, _zeros_attention = softmax, scaled_dot_product_attention

def softmax(x):
    found = _answer(x)
    return found if found is not None else _zeros_softmax(x)

def scaled_dot_product_attention(Q, K, V):
    found = _answer(Q, K, V)
    return found if found is not None else _zeros_attention(Q, K, V)

class Looked(MultiHeadAttention):
    def split_heads(self, x):
        found = _answer(x)
        return found if found is not None else super().split_heads(x)

    def combine_heads(self, x):
        found = _answer(x)
        return found if found is not None else super().combine_heads(x)

    def forward(self, Q, K, V, return_weights=False):
        found = _answer(Q, K, V)
        if found is not None and isinstance(found, tuple) == bool(return_weights):
            return found
        return super().forward(Q, K, V, return_weights)

MultiHeadAttention = Looked
'''
    return ZEROS + lookup


def test_a_lookup_table_of_the_public_fixtures_scores_no_more_than_zeros(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "table.py").write_text(_lookup_table_source(), encoding="utf-8")
    (submissions / "zeros.py").write_text(ZEROS, encoding="utf-8")
    (submissions / "honest.py").write_text((PROJECT / "solutions" / "multihead_attention.py").read_text(), "utf-8")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(submissions), "--out", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    scores = {r["student"]: r["score"] for r in json.loads((out / "results.json").read_text())}
    assert scores["honest"] == 60
    assert scores["table"] <= scores["zeros"], scores
    # the same file does fool the student's own instant check: the table is worth something only there
    check = subprocess.run([sys.executable, "-m", "grader.cli", "check", str(submissions / "table.py"), "--json"],
                           capture_output=True, text=True)
    assert json.loads(check.stdout)["score"] > scores["zeros"]
