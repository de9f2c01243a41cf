"""Hidden checks of the normalisation exercise, on sizes and values drawn from the student's seed."""

import pytest

from grader.grading.checks import expect_unchanged, expect_values

pytestmark = pytest.mark.mha(visibility="hidden")


def _starting(cases, prefix):
    return [cases[name] for name in sorted(cases) if name.startswith(prefix)]


@pytest.mark.mha(points=2, function="layer_norm")
def test_layer_norm_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, "layer/"))
    expect_unchanged(student, cases["layer/no-batch"])


@pytest.mark.mha(points=2, function="rms_norm")
def test_rms_norm_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, "rms/"))
    expect_unchanged(student, cases["rms/no-batch"])


@pytest.mark.mha(points=2, function="pre_norm_block")
def test_pre_norm_block_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, "block/"))
    expect_unchanged(student, cases["block/other-heads"])
