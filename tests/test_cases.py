"""Cases, twins and the shipped public fixtures."""

import numpy as np
import pytest

from grader.grading.assignment import get_assignment
from grader.grading.store import load_cases, save_cases
from grader.assignments.multihead_attention.cases import hidden_cases, public_cases
from grader.grading.case import PUBLIC_SIZES, draw_sizes, same_value
from grader.assignments.reference import load_reference
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


def test_grader_expectations_agree_with_the_reference_solution():
    reference = load_reference()
    for case in list(public_cases().values()) + list(hidden_cases(3).values()):
        if case.function in ("softmax", "scaled_dot_product_attention"):
            got = getattr(reference, case.function)(*case.args)
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

    from grader.assignments.twinning import with_expectations
    from grader.assignments.multihead_attention.cases import TWINS

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
