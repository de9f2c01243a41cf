"""Cases, twins and the shipped public fixtures."""

import numpy as np
import pytest

from grader.assignments.multihead_attention.cases import hidden_cases, public_cases
from grader.grading.assignment import get_assignment
from grader.grading.case import PUBLIC_SIZES, draw_sizes, same_value
from grader.grading.reference import load_reference
from grader.grading.store import load_cases, save_cases
from grader.seeding import student_seed


def test_shipped_public_cases_are_up_to_date():
    shipped = get_assignment("multihead_attention").public_cases()
    fresh = public_cases()
    assert shipped.keys() == fresh.keys()
    for name, case in fresh.items():
        assert same_value(shipped[name].expected, case.expected), name
        assert [(m, label) for m, label, _ in shipped[name].known_twins()] == [(m, label) for m, label, _ in case.known_twins()], (
            f"{name}: regenerate grader/assignments/multihead_attention/public_cases.npz")


def test_case_store_round_trip(tmp_path):
    cases = hidden_cases(7)
    save_cases(cases, tmp_path / "c.npz")
    loaded = load_cases(tmp_path / "c.npz")
    for name, case in cases.items():
        assert same_value(loaded[name].expected, case.expected)
        assert all(same_value(a, b) or a == b for a, b in zip(loaded[name].args, case.args))


def test_case_store_keeps_every_array_exactly_as_it_was(tmp_path):
    """The packed store gives back each array's dtype, shape, memory order and bytes, writable, and the
    previous one-member-per-array schema still loads to the same cases."""
    import io
    import json

    from grader.grading.case import Case

    rng = np.random.default_rng(5)
    fortran = np.asfortranarray(rng.standard_normal((3, 4)))
    odd = [rng.standard_normal((2, 3)).astype(np.float32), np.arange(5, dtype=np.int64), np.zeros((0, 4)),
           np.array(3.5), np.array([True, False]), np.array(["ab", "c"]), fortran, rng.standard_normal((4, 6))[:, ::2]]
    case = Case(id="store/odd", function="softmax", args=tuple(odd), kwargs={"mask": odd[4]}, weights=None,
                expected=odd[0] * 2, twins=[("softmax-unstable", "", odd[1])])
    save_cases({"odd": case}, tmp_path / "c.npz")
    loaded = load_cases(tmp_path / "c.npz")["odd"]
    with np.load(tmp_path / "c.npz") as data:
        assert sorted(data.files) == ["__index__", "__packed__"]  # one read, whatever the number of arrays
    for before, after in zip(odd, loaded.args):
        assert after.dtype == before.dtype and after.shape == before.shape
        assert np.array_equal(after, before)
        assert after.flags.writeable
    assert loaded.args[6].flags.f_contiguous and not loaded.args[6].flags.c_contiguous
    assert np.array_equal(loaded.kwargs["mask"], odd[4]) and np.array_equal(loaded.expected, odd[0] * 2)
    assert loaded.twins[0][0] == "softmax-unstable" and np.array_equal(loaded.twins[0][2], odd[1])
    loaded.args[1][0] = 99  # arrays are views of one buffer: writing one leaves the others as they were
    assert np.array_equal(loaded.args[2], odd[2]) and loaded.args[0].tolist() == odd[0].tolist()

    # the same cases written as schema 2 did: an index and one member per array
    with np.load(tmp_path / "c.npz") as data:
        index = json.loads(bytes(data["__index__"]).decode())
        packed = data["__packed__"]
    from grader.grading.store import _unpack

    arrays = _unpack(packed, index.pop("arrays"))
    index["schema_version"] = 2
    buffer = io.BytesIO()
    np.savez_compressed(buffer, __index__=np.frombuffer(json.dumps(index).encode(), dtype=np.uint8), **arrays)
    (tmp_path / "old.npz").write_bytes(buffer.getvalue())
    old = load_cases(tmp_path / "old.npz")["odd"]
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(old.args[2:], odd[2:]))


def test_grader_expectations_agree_with_the_reference_solution():
    reference = load_reference()
    for case in list(public_cases().values()) + list(hidden_cases(3).values()):
        if case.function in ("softmax", "scaled_dot_product_attention"):
            got = getattr(reference, case.function)(*case.args)
        elif case.calls is not None:  # several calls on one layer: the tuple of their values
            model = getattr(reference, case.class_name)(*case.init)
            got = tuple(getattr(model, path)(*args, **kwargs) for path, args, kwargs in case.calls)
        else:
            model = getattr(reference, case.class_name)(*case.init)
            for name, value in (case.weights or {}).items():
                setattr(model, name, value)
            got = getattr(model, case.function)(*case.args, **case.kwargs)
        assert same_value(got, case.expected), case.id


def test_sizes_are_distinct_so_axes_cannot_hide():
    rng = np.random.default_rng(0)
    for sizes in [PUBLIC_SIZES] + [draw_sizes(rng) for _ in range(50)]:
        values = [sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.D]
        assert len(set(values)) == len(values) and sizes.d_k >= 2


def test_hidden_inputs_differ_between_students_and_repeat_for_one():
    alice, bob = student_seed("alice", key="k"), student_seed("bob", key="k")
    assert alice != bob and alice == student_seed("alice", key="k") != student_seed("alice", key="other")
    first, again = hidden_cases(alice), hidden_cases(alice)
    assert np.array_equal(first["forward/cross"].args[0], again["forward/cross"].args[0])
    assert not np.array_equal(first["softmax/2d"].args[0].shape, hidden_cases(bob)["softmax/2d"].args[0].shape) or \
        not np.array_equal(first["softmax/2d"].args[0], hidden_cases(bob)["softmax/2d"].args[0])


@pytest.mark.parametrize("name", ["softmax/stability"])
def test_stability_rows_defeat_unstable_and_global_max_softmax(name):
    case = public_cases()[name]
    x = case.args[0]
    spans = x.max(axis=-1) - x.min(axis=-1)
    assert spans.max() > 1500 and np.ptp(x.max(axis=-1)) > 1000 and np.abs(x).max() >= 1000
    assert {m for m, _, _ in case.known_twins()} >= {"softmax-unstable", "softmax-global-max"}


def test_a_case_never_changes_once_built():
    """Cases are frozen descriptions: what a check relies on is fixed when the case is built, and the
    twins a case defers are kept in a memo beside its fields."""
    import dataclasses

    from grader.assignments.multihead_attention.cases import TWINS
    from grader.assignments.twinning import with_expectations

    case = public_cases()["softmax/2d"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.expected = None
    draft = dataclasses.replace(case, expected=None, twins=[], twin_builder=None)
    built = with_expectations(draft, "multihead_attention", TWINS)
    assert draft.expected is None and draft.twins == [] and built is not draft
    assert same_value(built.expected, case.expected) and built.twins is None and not built.twins_ready
    twins = built.known_twins()
    assert built.twins_ready and built.twins is None and built.known_twins() is twins  # computed once
    assert {misconception for misconception, _, _ in twins} >= {"softmax-wrong-axis"}
    cases = public_cases()
    assert cases["attention/cross"].companion_case is cases["attention/self"]  # linked in the dict returned
    assert all(case.shows_values for case in cases.values())  # the shipped fixtures
    assert not any(case.shows_values for case in public_cases(seed=5).values())  # a graded run's draw


def test_comparing_many_values_at_once_agrees_with_comparing_each():
    """same_values compares a twin's dozens of outcomes with the expected value at once: for arrays near and
    far, float32, NaN and infinities on either side, other shapes, tuples, exceptions and None it says what
    same_value says of each."""
    from grader.grading.case import Raised, same_value, same_values

    rng = np.random.default_rng(3)
    expected = rng.normal(size=(2, 3, 4))
    values = [expected + rng.normal(size=expected.shape) * size for size in (0, 1e-9, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1)]
    values[4] = values[4].copy()
    values[4][0, 0, 0] = np.inf
    values += [expected.astype(np.float32), np.full(expected.shape, np.nan), expected[0], expected.astype(int),
               Raised("ValueError", "no"), None, (expected, expected), expected > 0]
    with_nan = expected.copy()
    with_nan[1, 2, 3] = np.nan
    for target in (expected, with_nan, expected > 0, np.zeros((2, 0))):
        assert same_values(values, target) == [same_value(value, target) for value in values]
    pair = (expected, expected[0])
    pairs = [(value, expected[0]) for value in values[:10]] + [(expected,), expected, Raised("E", ""),
                                                              (expected, expected[0] * np.nan), pair]
    assert same_values(pairs, pair) == [same_value(value, pair) for value in pairs]
    assert same_values(pairs, pair).count(True) >= 4 and same_values(values, expected).count(False) >= 6


def test_comparing_rows_at_once_agrees_with_comparing_each_row():
    """same_rows tells the wrong rows of a value (which rows large logits broke) as same_value row by row
    does: 400 drawn pairs of every scale, float32 against float64, NaN and infinities in either, no columns."""
    from grader.grading.case import same_rows, same_value

    rng = np.random.default_rng(1)
    agreed = right = 0
    for trial in range(400):
        rows, width = int(rng.integers(1, 6)), int(rng.integers(0, 5))
        expected = rng.normal(size=(rows, width)) * 10.0 ** int(rng.integers(-3, 4))
        got = expected + rng.normal(size=(rows, width)) * 10.0 ** int(rng.integers(-12, 1))
        if trial % 5 == 0 and expected.size:
            expected[int(rng.integers(0, rows)), 0] = rng.choice([np.nan, np.inf, -np.inf])
        if trial % 7 == 0 and got.size:
            got[int(rng.integers(0, rows)), 0] = rng.choice([np.nan, np.inf])
        if trial % 3 == 0:
            got = got.astype(np.float32)
        each = [same_value(a, b) for a, b in zip(got, expected)]
        agreed += list(same_rows(got, expected)) == each
        right += sum(each)
    assert agreed == 400 and 200 < right < 1000 * 2


def test_one_value_against_many_agrees_with_each_comparison():
    """same_as_each compares a submission's output with every twin's at once: for 300 drawn values of every
    scale and shape (none, empty), with NaN and infinities on either side, float32, tuples and exceptions it
    says what same_value says of each pair."""
    from grader.grading.case import Raised, same_as_each, same_value

    rng = np.random.default_rng(2)
    equal = 0
    for trial in range(300):
        shape = tuple(int(size) for size in rng.integers(0, 4, size=int(rng.integers(0, 3))))
        got = rng.normal(size=shape) * 10.0 ** int(rng.integers(-3, 4))
        values = []
        for kind in range(int(rng.integers(0, 8))):
            value = got + rng.normal(size=shape) * 10.0 ** int(rng.integers(-12, 1))
            if kind % 6 == 1 and value.size:
                value.flat[0] = rng.choice([np.nan, np.inf])
            values.append(value.astype(np.float32) if kind % 6 == 2 else Raised("E", "m") if kind % 6 == 3
                          else (value, value) if kind % 6 == 4 else value)
        if trial % 4 == 0 and got.size:
            got.flat[-1] = np.nan
        assert same_as_each(got, values) == [same_value(got, value) for value in values], trial
        pairs = [(value, got) if isinstance(value, np.ndarray) else value for value in values]
        assert same_as_each((got, got), pairs) == [same_value((got, got), value) for value in pairs], trial
        equal += sum(same_value(got, value) for value in values)
    assert 100 < equal < 1000
