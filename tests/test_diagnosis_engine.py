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


@pytest.mark.parametrize("name", NAMES)
def test_a_twin_run_on_a_copied_instance_gives_what_a_fresh_instance_gives(name):
    """A twin's instance may be a copy of one made before (its constructor's random weights are replaced by
    the case's): every twin on every case of the exercise returns, or raises, exactly what it does on an
    instance made afresh."""
    import numpy as np

    from grader.assignments.twinning import run_case

    def fresh(module, case):
        try:
            with np.errstate(all="ignore"):
                return run_case(module, case)
        except Exception as error:
            return Raised(type(error).__name__, str(error))

    def identical(a, b):
        if isinstance(a, tuple) and isinstance(b, tuple):
            return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype \
                and np.array_equal(a, b, equal_nan=True)
        return type(a) is type(b) and a == b

    module = _module(name)
    compared = 0
    for case in [*module.public_cases().values(), *module.hidden_cases(5).values()]:
        if case.class_name is None:
            continue
        for twin in module.TWINS:
            copy = patched(module.ASSIGNMENT, twin)
            assert identical(outcome_of(copy, case), fresh(copy, case)), (case.id, twin.label)
            compared += 1
    assert compared or all(case.class_name is None for case in module.public_cases().values())


def test_an_instance_is_copied_only_when_the_case_replaces_all_a_call_could_change():
    import numpy as np

    from grader.assignments.twinning import _new_instance

    class Weighted:
        def __init__(self, width):
            self.width, self.name = width, "layer"
            self.W = np.random.default_rng(0).normal(size=(width, width))

    class Cached(Weighted):
        def __init__(self, width):
            super().__init__(width)
            self.seen = []  # a call appends here: a copy would share it with every later run

    class Slotted:
        __slots__ = ("W",)

        def __init__(self, width):
            self.W = np.zeros((width, width))

    class Refusing:
        def __init__(self, width):
            raise ValueError("no")

    weights = {"W": np.eye(3)}
    copy = _new_instance(Weighted, (3,), weights)
    assert isinstance(copy, Weighted) and copy.width == 3 and copy.name == "layer"
    assert copy is not _new_instance(Weighted, (3,), weights)
    assert _new_instance(Weighted, (3,), {}) is None  # the constructor's own W would be used: made afresh
    assert _new_instance(Cached, (3,), weights) is None
    assert _new_instance(Slotted, (3,), weights) is None
    assert _new_instance(Refusing, (3,), weights) is None  # made, and refused, on every call
    assert _new_instance(Weighted, ([3],), weights) is None  # arguments that cannot key a cache


def test_an_edited_reference_is_compiled_again(tmp_path, monkeypatch):
    import os
    import shutil

    from grader.paths import solution_path

    shutil.copy(solution_path("multihead_attention"), tmp_path / "multihead_attention.py")
    monkeypatch.setenv("MHA_SOLUTIONS", str(tmp_path))
    assert not hasattr(fresh_reference("multihead_attention"), "EDITED")
    path = tmp_path / "multihead_attention.py"
    status = path.stat()
    path.write_text(path.read_text(encoding="utf-8") + "\nEDITED = 1\n", encoding="utf-8")
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))  # the same time: the size tells
    assert fresh_reference("multihead_attention").EDITED == 1
    assert fresh_reference("multihead_attention") is not fresh_reference("multihead_attention")
