"""Public checks of feature_map: elu(x) + 1, positive everywhere."""

import pytest

from grader.grading.checks import expect_value

pytestmark = pytest.mark.mha(function="feature_map", visibility="public")


@pytest.mark.mha(points=2, probes=("linear-attention-elu-without-one",))
def test_linear_feature_map_is_elu_plus_one(student, cases):
    expect_value(student, cases["feature/grid"])
    expect_value(student, cases["feature/heads"])


@pytest.mark.mha(points=1, probes=("linear-attention-elu-without-one",))
def test_linear_feature_map_on_far_inputs(student, cases):
    expect_value(student, cases["feature/far"])
