"""The one ``mha`` marker of the suites, read the same way by the runner and the pytest plugin.

``@mha(points=2, function="split_heads", visibility="public",
probes=("split-heads-no-transpose",))`` (``from grader.grading.marker import
mha``): a module's ``pytestmark = mha(...)`` gives the defaults, a test's own
marker overrides them. Under pytest ``mha(...)`` is ``pytest.mark.mha(...)``
itself; elsewhere (the fast runner of ``mha check`` and ``mha grade``) it is a
stand-in with the same ``name`` and ``kwargs``, so a student's check does not
import pytest (about a third of NumPy's own import time) only to read four
options. ``@pytest.mark.mha(...)`` in a suite still works the same way.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

MARKER = "mha"
MARKER_HELP = "mha(points=1, function=None, visibility='public', probes=()): a graded check of mha-lab"


@dataclass(frozen=True)
class CheckMarker:
    points: float = 1.0
    function: str = "?"
    visibility: str = "public"
    probes: tuple[str, ...] = ()  # the misconceptions the check is written to reveal


@dataclass(frozen=True)
class SuiteMark:
    """``pytest.mark.mha(...)`` where pytest is not imported: a decorator that records its options where pytest
    keeps a test's marks (``pytestmark``), and a module's ``pytestmark`` value."""

    kwargs: dict
    name: str = MARKER
    args: tuple = ()

    def __call__(self, function):
        function.pytestmark = [*getattr(function, "pytestmark", []), self]
        return function


def mha(**options):
    """The ``mha`` marker with ``options`` (points, function, visibility, probes): pytest's own under pytest."""
    pytest = sys.modules.get("pytest")
    if pytest is not None:
        return getattr(pytest.mark, MARKER)(**options)
    return SuiteMark(kwargs=options)


def read_marker(marks, *, visibility: str = "public") -> CheckMarker:
    """The merged ``mha`` options of ``marks``, outermost first (a module's, then the test's own)."""
    options: dict = {}
    for mark in marks or ():
        if getattr(mark, "name", None) == MARKER:
            options.update(mark.kwargs)
    return CheckMarker(points=float(options.get("points", 1)), function=options.get("function", "?"),
                       visibility=options.get("visibility", visibility), probes=tuple(options.get("probes", ())))
