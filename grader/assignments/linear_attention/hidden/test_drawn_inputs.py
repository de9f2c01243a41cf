"""Hidden checks of the linear-attention exercise, on sizes and values drawn from the student's seed."""

import pytest

from grader.grading.checks import expect_unchanged, expect_values

pytestmark = pytest.mark.mha(visibility="hidden")


def _starting(cases, prefix):
    return [cases[name] for name in sorted(cases) if name.startswith(prefix)]


@pytest.mark.mha(points=1, function="feature_map")
def test_linear_feature_map_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, "feature/"))


@pytest.mark.mha(points=2, function="linear_attention")
def test_linear_attention_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, "full/"))


@pytest.mark.mha(points=2, function="causal_linear_attention")
def test_causal_linear_attention_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, "causal/"))


@pytest.mark.mha(points=2, function="linear_attention_step")
def test_step_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, "step/"))
    expect_unchanged(student, cases["step/middle"])
