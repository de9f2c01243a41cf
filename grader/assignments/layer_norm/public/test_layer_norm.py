"""Public checks of layer_norm and rms_norm: statistics of each token's features, then the learned weights."""

import pytest

from grader.grading.checks import expect_unchanged, expect_value

pytestmark = pytest.mark.mha(visibility="public")


@pytest.mark.mha(points=3, function="layer_norm", probes=("norm-axis", "norm-sample-variance", "norm-affine"))
def test_layer_norm_normalises_each_token_over_its_features(student, cases):
    expect_value(student, cases["layer/tokens"])
    expect_value(student, cases["layer/no-batch"])


@pytest.mark.mha(points=2, function="layer_norm", probes=("norm-epsilon",))
def test_layer_norm_keeps_eps_inside_the_root(student, cases):
    expect_value(student, cases["layer/nearly-constant"])
    expect_value(student, cases["layer/large-eps"])


@pytest.mark.mha(points=1, function="layer_norm", probes=("norm-in-place",))
def test_layer_norm_leaves_its_input_alone(student, cases):
    expect_unchanged(student, cases["layer/tokens"])


@pytest.mark.mha(points=3, function="rms_norm", probes=("norm-rms-centred", "norm-rms-scale", "norm-axis"))
def test_rms_norm_divides_by_the_root_mean_square_without_centring(student, cases):
    expect_value(student, cases["rms/tokens"])
    expect_value(student, cases["rms/no-batch"])


@pytest.mark.mha(points=2, function="rms_norm", probes=("norm-epsilon",))
def test_rms_norm_keeps_eps_inside_the_root(student, cases):
    expect_value(student, cases["rms/tiny"])
    expect_value(student, cases["rms/large-eps"])


@pytest.mark.mha(points=1, function="rms_norm", probes=("norm-in-place",))
def test_rms_norm_leaves_its_input_alone(student, cases):
    expect_unchanged(student, cases["rms/tokens"])
