"""What normalization keeps and drops: the disguises of a copy change nothing, the API and NumPy stay."""

from __future__ import annotations

from grader.paths import exercise_path
from grader.similarity.fingerprints import fingerprint
from grader.similarity.tokens import api_names, normalize

API = api_names(exercise_path().read_text(encoding="utf-8"))

ORIGINAL = '''
import numpy as np


def softmax(x):
    """Stable softmax."""
    shifted = x - np.max(x, axis=-1, keepdims=True)  # keep exponents <= 0
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.heads = num_heads

    def split_heads(self, x):
        b, t, d = x.shape
        return x.reshape(b, t, self.heads, d // self.heads).transpose(0, 2, 1, 3)
'''

DISGUISED = '''
import numpy as numpy_lib
def softmax(values):
    # a different comment
    """A different docstring,
    on two lines."""
    moved = values - numpy_lib.max(values, axis=-1, keepdims=True)

    ex = numpy_lib.exp(
        moved
    )
    return ex / ex.sum(axis=-1, keepdims=True)
class MultiHeadAttention:
    def split_heads(me, tensor):
        n, length, width = tensor.shape
        return tensor.reshape(n, length, me.h, width // me.h).transpose(0, 2, 1, 3)
    def __init__(me, d_model=8, num_heads=2):
        me.h = num_heads
'''


def texts(code: str) -> dict[str, list[str]]:
    tokens = normalize([code], api=API)
    return {unit.name: [token.text for token in tokens.tokens[unit.start:unit.end]] for unit in tokens.units}


def test_renaming_comments_docstrings_layout_and_order_change_no_unit():
    original, disguised = texts(ORIGINAL), texts(DISGUISED)
    assert set(original) == {"", "softmax", "MultiHeadAttention", "MultiHeadAttention.__init__",
                             "MultiHeadAttention.split_heads"}
    for name in ("softmax", "MultiHeadAttention.__init__", "MultiHeadAttention.split_heads"):
        assert original[name] == disguised[name], name
    assert set(fingerprint(normalize([ORIGINAL], api=API)).hashes) == set(
        fingerprint(normalize([DISGUISED], api=API)).hashes)


def test_what_a_student_cannot_rename_stays_itself():
    softmax = texts(ORIGINAL)["softmax"]
    assert {"softmax", "exp", "max", "sum", "axis", "keepdims", "True", "return"} <= set(softmax)
    assert not {"shifted", "e", "x", "np"} & set(softmax) and "V" in softmax
    split = texts(ORIGINAL)["MultiHeadAttention.split_heads"]
    assert {"split_heads", "reshape", "transpose", "shape"} <= set(split) and "heads" not in split


def test_a_different_algorithm_gives_different_tokens():
    swapped = ORIGINAL.replace(".transpose(0, 2, 1, 3)", ".swapaxes(1, 2)")
    assert texts(swapped)["MultiHeadAttention.split_heads"] != texts(ORIGINAL)["MultiHeadAttention.split_heads"]
    assert texts(swapped)["softmax"] == texts(ORIGINAL)["softmax"]


def test_broken_code_and_notebook_cells_are_read_as_far_as_they_go():
    broken = ORIGINAL + "\ndef forward(self, Q, K, V\n    return Q\n"
    assert texts(broken)["softmax"] == texts(ORIGINAL)["softmax"]
    cells = normalize(["import numpy as np\n", ORIGINAL.split("class")[0].replace("import numpy as np", "")], api=API)
    softmax = next(unit for unit in cells.units if unit.name == "softmax")
    assert {token.cell for token in cells.tokens[softmax.start:softmax.end]} == {1}
    assert cells.tokens[softmax.start].line == 5  # lines are counted within the cell


def test_decorators_belong_to_their_function_and_fstrings_are_one_string():
    code = '''
import functools


@functools.cache
def softmax(x):
    return f"{x!r} and {x}"
'''
    units = texts(code)
    assert units["softmax"][:2] == ["@", "V"] and units["softmax"].count("S") == 1 and "" in units
