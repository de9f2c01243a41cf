"""The diagnosis engine on arrays, without a worker: each twin is named as itself, the reference as nothing."""

import importlib

import pytest

from grader.assignments.twinning import outcome_of, patched
from grader.grading.assignment import ASSIGNMENTS
from grader.grading.case import Raised, same_value
from grader.grading.checks import failure_from_value
from grader.grading.reference import fresh_reference

NAMES = sorted(ASSIGNMENTS)


def _module(name):
    return importlib.import_module(f"grader.assignments.{name}.cases")


@pytest.mark.parametrize("name", NAMES)
def test_every_twin_is_diagnosed_as_its_own_mistake(name):
    module = _module(name)
    seen = set()
    for cases in (module.public_cases(), module.hidden_cases(11)):
        for case in cases.values():
            if not case.names_mistakes:
                continue  # sizes of one: many mistakes coincide, so failures there name none
            for misconception, label, value in case.known_twins():
                if isinstance(value, Raised):
                    continue
                failure = failure_from_value(case, value)
                named = {failure.misconception} | {other.misconception for other in failure.alternatives}
                assert misconception in named, (case.id, label, failure.misconception)
                seen.add(misconception)
    # every catalogued twin of the exercise shows somewhere
    assert seen >= {twin.misconception for twin in module.TWINS} - _raising_only(module), sorted(seen)


def _raising_only(module):
    """Twins whose mistake shows only as an exception on every case (named by the error path)."""
    raising = set()
    for twin in module.TWINS:
        outcomes = [outcome_of(patched(module.ASSIGNMENT, twin), case) for case in module.public_cases().values()]
        differing = [value for value, case in zip(outcomes, module.public_cases().values())
                     if not same_value(value, case.expected)]
        if all(isinstance(value, Raised) for value in differing):
            raising.add(twin.misconception)
    return raising


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_is_diagnosed_as_nothing(name):
    module = _module(name)
    for case in module.public_cases().values():
        if case.function == "__init__":
            continue  # the constructor's case holds only the shapes it must give
        value = outcome_of(fresh_reference(name), case)
        assert same_value(value, case.expected), case.id
        assert not any(same_value(value, twin_value) for _, _, twin_value in case.known_twins()), case.id


@pytest.mark.parametrize("name", NAMES)
def test_every_twin_changes_some_output_so_the_reference_calls_through_names(name):
    module = _module(name)
    cases = list(module.public_cases().values())
    for twin in module.TWINS:
        copy = patched(name, twin)
        assert any(not same_value(outcome_of(copy, case), case.expected) for case in cases), twin.label


@pytest.mark.parametrize("name", NAMES)
def test_twins_left_unrun_are_those_whose_function_the_call_never_enters(name):
    """A twin is skipped only when the reference's call for the case never enters the twin's function; run
    anyway, such a twin gives the expected value. And the shortcut is taken: some twins are skipped."""
    from grader.assignments.twinning import untouched

    module = _module(name)
    skipped = 0
    for case in [*module.public_cases().values(), *module.hidden_cases(11).values()]:
        if case.function == "__init__":
            continue  # the constructor's case holds only the shapes it must give (its weights are drawn)
        unreached = untouched(module.ASSIGNMENT, case)
        assert case.function not in unreached, case.id
        for twin in module.TWINS:
            if twin.target.rpartition(".")[2] in unreached:
                skipped += 1
                assert same_value(outcome_of(patched(module.ASSIGNMENT, twin), case), case.expected), \
                    (case.id, twin.label)
    if len({twin.target for twin in module.TWINS}) > 1:
        assert skipped, name
