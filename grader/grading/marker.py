"""The one ``mha`` marker of the suites, read the same way by the runner and the pytest plugin.

``@pytest.mark.mha(points=2, function="split_heads", visibility="public",
probes=("split-heads-no-transpose",))``: a module's ``pytestmark`` gives the
defaults, a test's own marker overrides them.
"""

from __future__ import annotations

from dataclasses import dataclass

MARKER = "mha"
MARKER_HELP = "mha(points=1, function=None, visibility='public', probes=()): a graded check of mha-lab"


@dataclass(frozen=True)
class CheckMarker:
    points: float = 1.0
    function: str = "?"
    visibility: str = "public"
    probes: tuple[str, ...] = ()  # the misconceptions the check is written to reveal


def read_marker(marks, *, visibility: str = "public") -> CheckMarker:
    """The merged ``mha`` options of ``marks``, outermost first (a module's, then the test's own)."""
    options: dict = {}
    for mark in marks or ():
        if getattr(mark, "name", None) == MARKER:
            options.update(mark.kwargs)
    return CheckMarker(points=float(options.get("points", 1)), function=options.get("function", "?"),
                       visibility=options.get("visibility", visibility), probes=tuple(options.get("probes", ())))
