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


INLINED = '''
import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def gather(rows):
    return np.array([[r[i] for i in range(3) if i % 2] for r in rows])
'''

EXTRACTED = '''
import numpy as np


def softmax(values):
    peak = np.max(values, axis=-1, keepdims=True)
    moved = values - peak
    ex = np.exp(moved)
    total = ex.sum(axis=-1, keepdims=True)
    result = ex / total
    return result


def gather(rows):
    kept = []
    for r in rows:
        picked = []
        for i in range(3):
            if i % 2:
                picked.append(r[i])
        kept.append(picked)
    out = np.array(kept)
    return out
'''


def test_inlined_and_extracted_variables_and_append_loops_read_the_same():
    extracted = texts(EXTRACTED)
    assert texts(INLINED)["softmax"] == extracted["softmax"]
    assert texts(INLINED)["gather"] == extracted["gather"]
    assert "for" in texts(INLINED)["gather"] and "append" not in extracted["gather"]


def test_what_the_canonical_form_leaves_alone():
    from grader.similarity.canonical import canonical

    counter = "def f(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"
    assert canonical(counter).text.count("total") == 3  # a running total is no temporary
    closure = "def f(x):\n    y = x + 1\n    return lambda: y\n"
    assert "lambda: y" in canonical(closure).text  # another scope reads it: left where it is
    big = "def f(x):\n    y = np.exp(np.log(np.abs(x) + 1.0) * 2.0 - np.sqrt(np.abs(x) + 3.0) / 4.0)\n    return y + y\n"
    assert canonical(big).text.splitlines()[-1].strip() == "return y + y"  # large and read twice: kept
    module = "SCALE = 2.0\n\ndef f(x):\n    return SCALE * x\n"
    assert "SCALE * x" in canonical(module).text  # only a function's own temporaries move


def test_canonical_lines_point_into_the_original_file():
    from grader.similarity.canonical import canonical

    form = canonical(EXTRACTED)
    rewritten = form.text.splitlines()
    assert [form.original(n) for n, line in enumerate(rewritten, 1) if "np.exp" in line] == [
        (6, 11)]  # one return now: from peak, the first temporary, to the return they were folded into
    gather_return = next(n for n, line in enumerate(rewritten, 1) if "return np.array" in line)
    assert form.original(gather_return) == (15, 23)  # the lists, both loops, out and the return
    tokens = normalize([EXTRACTED], api=API)
    unit = next(unit for unit in tokens.units if unit.name == "softmax")
    assert {token.line for token in tokens.tokens[unit.start:unit.end]} <= set(range(5, 12))


def test_code_broken_half_way_is_canonical_up_to_the_break():
    broken = EXTRACTED + "\n\ndef forward(self, Q, K, V\n    return Q\n"
    assert texts(broken)["softmax"] == texts(EXTRACTED)["softmax"]
    assert texts(broken)["gather"] == texts(EXTRACTED)["gather"]
    in_class = "class Holder:\n" + "".join(f"    {line}\n" if line else "\n" for line in EXTRACTED.splitlines())
    broken_first = in_class.replace("def softmax(values):", "def softmax(values)")  # broken before the other
    assert texts(broken_first)["Holder.gather"] == texts(in_class)["Holder.gather"] == texts(INLINED)["gather"]
    assert texts(broken_first)["Holder.softmax"] != texts(in_class)["Holder.softmax"]  # kept as written


def test_one_line_helpers_are_put_where_they_are_called_across_cells():
    helpers = ('''
import numpy as np


def _shift(a):
    return a - a.max(axis=-1, keepdims=True)
''', '''
def softmax(x):
    e = np.exp(_shift(x))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ K.swapaxes(-1, -2))
    return w @ V, w
''')
    folded = texts("import numpy as np\n\n\ndef softmax(x):\n"
                   "    return np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x - x.max(axis=-1, keepdims=True))"
                   ".sum(axis=-1, keepdims=True)\n\n\ndef scaled_dot_product_attention(Q, K, V):\n"
                   "    w = softmax(Q @ K.swapaxes(-1, -2))\n    return w @ V, w\n")
    tokens = normalize(list(helpers), api=API)  # the helper in one notebook cell, its caller in the next
    units = {unit.name: [token.text for token in tokens.tokens[unit.start:unit.end]] for unit in tokens.units}
    assert "_shift" not in units and units["softmax"] == folded["softmax"]
    assert "softmax" in units["scaled_dot_product_attention"]  # the exercise's own functions stay calls
    passed_around = helpers[0] + helpers[1] + "\nSHIFT = _shift\n"
    assert "_shift" in texts(passed_around)  # a helper used as a value stays a function


def test_numpy_function_forms_and_idle_statements_read_as_the_plain_code():
    plain = texts("import numpy as np\n\n\ndef scaled_dot_product_attention(Q, K, V):\n"
                  "    w = softmax(Q @ K.transpose(0, 1, 3, 2) / np.sqrt(Q.shape[-1]))\n"
                  "    return w @ V, w.sum(axis=-1).max()\n")
    swapped = texts("import numpy as numpy_lib\n\n\ndef scaled_dot_product_attention(Q, K, V):\n"
                    "    print('shapes', Q.shape, K.shape)\n    unused = K.shape[0]\n    Q\n"
                    "    w = softmax(numpy_lib.divide(numpy_lib.matmul(Q, numpy_lib.transpose(K, (0, 1, 3, 2))),"
                    " numpy_lib.sqrt(Q.shape[-1])))\n"
                    "    return numpy_lib.matmul(w, V), numpy_lib.amax(numpy_lib.sum(w, axis=-1))\n")
    assert plain["scaled_dot_product_attention"] == swapped["scaled_dot_product_attention"]
    kept = texts("import numpy as np\n\n\ndef f(x):\n    total = 0\n    for v in x:\n        total = total + v\n"
                 "    return np.exp(x)\n")["f"]
    assert kept.count("for") == 1 and "exp" in kept  # a loop's running total is read: it stays


def test_numpy_random_names_stay_themselves():
    init = texts("import numpy as np\n\n\ndef f(n):\n    g = np.random.default_rng(0)\n"
                 "    return g.normal(0.0, 1.0, (n, n)), g.standard_normal(n)\n")["f"]
    assert {"random", "default_rng", "normal", "standard_normal"} <= set(init)
