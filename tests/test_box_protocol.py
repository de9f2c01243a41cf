"""The box ``StudentCode`` calls through: the sandbox and the in-process stand-in both offer all of it."""

from __future__ import annotations

import inspect

import pytest

from grader.grading.student import Box
from grader.sandbox.client import Sandbox
from grader.sandbox.in_process import InProcessBox

MEMBERS = ("limits", "worker", "restarts", "budget_left", "run", "call_batch", "output_size", "output_since",
           "retire")


def test_the_protocol_names_what_student_code_uses():
    declared = {name for name in vars(Box) if not name.startswith("_")} | set(Box.__annotations__)
    assert declared == set(MEMBERS)


def _accepts(method, parameter: inspect.Parameter) -> bool:
    accepted = inspect.signature(method).parameters
    if parameter.name in accepted:
        return True
    variadic = inspect.Parameter.VAR_KEYWORD if parameter.kind == inspect.Parameter.KEYWORD_ONLY \
        else inspect.Parameter.VAR_POSITIONAL
    return any(other.kind in (variadic, inspect.Parameter.VAR_KEYWORD) for other in accepted.values())


@pytest.mark.parametrize("box", [Sandbox, InProcessBox], ids=lambda box: box.__name__)
def test_each_box_offers_every_member_with_the_parameters_student_code_passes(box):
    for name in ("run", "call_batch", "output_size", "output_since", "retire"):
        wanted = inspect.signature(getattr(Box, name)).parameters.values()
        assert all(_accepts(getattr(box, name), parameter) for parameter in wanted if parameter.name != "self"), name
    assert isinstance(inspect.getattr_static(box, "budget_left"), (property, float))
    in_process = InProcessBox(module=type("module", (), {})())
    assert (in_process.output_size(), in_process.output_since(0)) == (0, "")
    assert in_process.limits.max_restarts >= 0 and in_process.worker is not None
