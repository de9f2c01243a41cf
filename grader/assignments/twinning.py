"""Expected values and buggy twins of the advanced exercises, from the reference itself.

A twin replaces one function or method of a private copy of the reference
module (``grader.grading.reference.fresh_reference``) with the mistaken version.
The reference's other functions look names up in their module, so the
mistake flows into every graded function that uses the patched one: a
mistake in ``masked_softmax`` is recognized in ``masked_attention``'s output
too, and named as its root cause.

Instructor-side only: public cases ship with the twins' outputs precomputed.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

import numpy as np

from grader.grading.case import PUBLIC_SIZES, Case, Raised, draw_sizes, evolved, link_companions, same_values
from grader.grading.reference import fresh_reference, load_reference
from grader.sandbox.worker.recording import Recorder


@dataclass(frozen=True)
class Twin:
    misconception: str
    label: str
    target: str  # "function" or "Class.method" in the reference module
    make: Callable[[ModuleType], Callable]  # the module copy -> the mistaken function or method


def floats(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    """Small random floats (never integers: they saturate the softmax and hide a missing scale)."""
    return rng.normal(0.0, scale, shape)


@functools.lru_cache(maxsize=None)
def patched(assignment: str, twin: Twin) -> ModuleType:
    """A private copy of the reference of ``assignment`` with ``twin``'s mistake in place."""
    module = fresh_reference(assignment)
    owner_name, _, attribute = twin.target.rpartition(".")
    owner = getattr(module, owner_name) if owner_name else module
    setattr(owner, attribute, twin.make(module))
    return module


_ATOMIC = frozenset({bool, int, float, complex, str, bytes, type(None)})  # copy.deepcopy gives these back as they are


def fresh_copy(value, memo: dict | None = None):
    """``copy.deepcopy(value)``, quicker for what cases hold (arrays in tuples, lists and dicts): each array
    copied once in its own memory order, an array given twice (self-attention's Q, K, V) copied once and given
    twice, anything else through ``deepcopy`` with the same memo."""
    if type(value) in _ATOMIC:
        return value  # what deepcopy returns for these too: themselves
    memo = {} if memo is None else memo
    if isinstance(value, np.ndarray) and not value.dtype.hasobject:
        found = memo.get(id(value))
        if found is None:
            found = memo[id(value)] = value.copy(order="K")
            memo.setdefault(id(memo), []).append(value)  # as deepcopy keeps the original alive for its id
        return found
    if type(value) is tuple:
        return tuple(fresh_copy(item, memo) for item in value)
    if type(value) is list:
        return [fresh_copy(item, memo) for item in value]
    if type(value) is dict and all(type(key) is str for key in value):
        return {key: fresh_copy(item, memo) for key, item in value.items()}
    return copy.deepcopy(value, memo)


def run_case(module: ModuleType, case: Case, *, copied_instances: bool = False):
    """What ``module`` returns for ``case``, called the way the worker calls a submission.

    With ``copied_instances`` the instance may be a copy of one its class made before from the same
    arguments (``_new_instance``): the same object as a fresh one, without running the constructor again."""
    memo: dict = {}
    args, kwargs = fresh_copy(case.args, memo), fresh_copy(case.kwargs, {})
    if case.class_name is None:
        return getattr(module, case.function)(*args, **kwargs)
    cls = getattr(module, case.class_name)
    instance = _new_instance(cls, tuple(case.init or ()), case.weights) if copied_instances else None
    if instance is None:
        instance = cls(*(case.init or ()))
    for name, value in (case.weights or {}).items():
        setattr(instance, name, np.array(value, copy=True))
    if case.calls is None:
        return getattr(instance, case.function)(*args, **kwargs)
    results = []
    for path, step_args, step_kwargs in case.calls:
        target = instance
        for part in path.split("."):
            target = target[part] if isinstance(target, dict) else getattr(target, part)
        results.append(target if step_args is None else
                       target(*fresh_copy(step_args), **fresh_copy(step_kwargs or {})))
    return tuple(results)


# what the constructor leaves that no call can change in place: an attribute holding one of these is the
# same object in a copy of the instance as in a fresh one
_IMMUTABLE = (bool, int, float, complex, str, bytes, type(None), np.generic)


# a student's forward twins (68 classes, one per patched copy) at two widths of heads make 136: a cache smaller
# than that is read in a cycle and misses every time
@functools.lru_cache(maxsize=512)
def _made(cls: type, init: tuple) -> tuple[object, frozenset[str]] | None:
    """``cls(*init)`` made once, and the names of its attributes that hold anything but a plain number or
    string; None when copying its instances could differ from making them (a ``__new__`` or ``__slots__``
    of its own, or a constructor that raises: that is made, and raises, on every call)."""
    if cls.__new__ is not object.__new__ or any("__slots__" in vars(owner) for owner in cls.__mro__[:-1]):
        return None
    try:
        with np.errstate(all="ignore"):
            made = cls(*init)
    except Exception:
        return None
    if type(made) is not cls or not hasattr(made, "__dict__"):
        return None
    return made, frozenset(name for name, value in vars(made).items() if not isinstance(value, _IMMUTABLE))


def _new_instance(cls: type, init: tuple, weights: dict | None):
    """A copy of the instance ``cls(*init)`` made once, when the copy is the same as a fresh instance for this
    call: the constructor's arrays (and anything else a call could change in place) are all attributes the
    case sets anew (``weights``), and its other attributes are plain numbers and strings. Else None.

    The core exercise's twins each build ``MultiHeadAttention(D, H)``, whose constructor draws four random
    matrices that the case's weights replace: a third of a twin's run on forward."""
    try:
        made = _made(cls, init)
    except TypeError:  # unhashable constructor arguments
        return None
    if made is None or not made[1] <= (weights or {}).keys():
        return None
    instance = object.__new__(cls)
    instance.__dict__.update(vars(made[0]))
    return instance


def outcome_of(module: ModuleType, case: Case):
    """``run_case``'s value, or ``Raised`` when the call raises."""
    try:
        with np.errstate(all="ignore"):
            value = run_case(module, case, copied_instances=True)
    except Exception as error:  # a mistake may raise, e.g. a shape error in matmul
        return Raised(type(error).__name__, str(error))
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


@functools.lru_cache(maxsize=None)
def _recorded_reference(assignment: str) -> tuple[ModuleType, Recorder, frozenset[str]]:
    """A private copy of the reference whose functions and methods note each entry (and their names)."""
    module = fresh_reference(assignment)
    recorder = Recorder()
    names = recorder.instrument(vars(module), {module.__file__})
    return module, recorder, frozenset(names)


def untouched(assignment: str, case: Case) -> frozenset[str]:
    """The reference's functions and methods (by name) that its call for ``case`` never enters.

    A twin changes one of them in a copy of the same code, and the same code
    on the same inputs takes the same path: a twin whose function is not
    entered returns the reference's value, so it need not be run. A name the
    recording does not know (not wrapped) is never in this set.
    """
    module, recorder, names = _recorded_reference(assignment)
    with recorder.call() as reached:
        try:
            with np.errstate(all="ignore"):
                run_case(module, case)  # a fresh instance: its constructor is entered as a twin's would be
        except Exception:
            pass
    return names - set(reached)


_REFERENCE = object()  # with_expectations: the expected value is the reference's
# up to this many twins are run without first finding which functions the call enters (``untouched``: one run
# of the reference with every entry recorded, which costs two or three twins' runs)
FEW_TWINS = 2


def with_expectations(case: Case, assignment: str, twins: tuple[Twin, ...], *, expected=_REFERENCE) -> Case:
    """``case`` with its expected value (the reference's, unless ``expected`` is given) and the twins that
    differ from it, made on first use; a new case, ``case`` itself is left as it is."""
    if expected is _REFERENCE:
        with np.errstate(all="ignore"):  # a copied instance where that is the same as a fresh one, as for twins
            expected = run_case(load_reference(assignment), case, copied_instances=True)

    # each twin's outcome on this case, run once however many checks ask (None: the same as the expected value)
    outcomes: dict[Twin, object] = {}
    unreached: list[frozenset[str]] = []

    def differing(case: Case, only=None) -> list:
        asked = [twin for twin in twins if only is None or (twin.misconception, twin.label) in only]
        if not unreached and len([twin for twin in asked if twin not in outcomes]) > FEW_TWINS:
            unreached.append(untouched(assignment, case))
        # the mistake of a twin whose function this call never enters is in code it never runs: that twin
        # returns the expected value (so for a few twins, running them costs less than finding which those are)
        asked = [twin for twin in asked if not unreached or twin.target.rpartition(".")[2] not in unreached[0]]
        made = [(twin, outcome_of(patched(assignment, twin), case)) for twin in asked if twin not in outcomes]
        for (twin, value), same in zip(made, same_values([value for _, value in made], case.expected)):
            outcomes[twin] = None if same else (value,)
        return [(twin.misconception, twin.label, outcomes[twin][0]) for twin in asked if outcomes[twin] is not None]

    return evolved(case, expected=expected, twins=None, twin_builder=differing)


@dataclass(frozen=True)
class CaseSets:
    """An exercise's public and hidden cases, both made by its ``build(rng, sizes, prefix)``.

    Public cases use the public sizes and the fixed seed (they ship precomputed),
    or inputs drawn from ``seed`` in a graded run; hidden cases draw their sizes
    too, from the student's seed.
    """

    build: Callable[[np.random.Generator, object, str], dict]
    public_seed: int
    public_sizes: object = PUBLIC_SIZES  # the exercise's own sizes type, when it has one
    draw: Callable[[np.random.Generator], object] = draw_sizes

    def public(self, seed: int | None = None) -> dict[str, Case]:
        """Only the shipped fixtures (no ``seed``) may show their values in feedback: a graded run's drawn
        inputs repeat when the submission is graded again, so their expected values stay unseen."""
        rng = np.random.default_rng(self.public_seed if seed is None else seed)
        cases = self.build(rng, self.public_sizes, "")
        return link_companions({name: evolved(case, shows_values=seed is None, companion_case=None)
                                for name, case in cases.items()})

    def hidden(self, seed: int) -> dict[str, Case]:
        rng = np.random.default_rng(seed)
        return self.build(rng, self.draw(rng), "hidden:")
