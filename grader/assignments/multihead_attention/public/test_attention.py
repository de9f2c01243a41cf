"""Public checks of scaled_dot_product_attention."""

import numpy as np

from grader.content.messages import Message
from grader.grading.checks import expect_unchanged, expect_value, expect_values, failure_from_error, failure_from_value
from grader.grading.marker import mha
from grader.grading.sizes_of_one import expect_sizes_of_one

pytestmark = mha(function="scaled_dot_product_attention", visibility="public")


def _pair(student, case):
    """The student's (out, weights), or the failure that explains why there is none."""
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise failure_from_error(case.function, outcome, case, student=student)
    value = outcome.value
    shapes_right = isinstance(value, tuple) and len(value) == 2 and all(
        isinstance(item, np.ndarray) and item.shape == expected.shape for item, expected in zip(value, case.expected))
    if not shapes_right:
        raise failure_from_value(case, value, student=student, reached=outcome.reached)
    return value


@mha(points=2)
def test_attention_shapes_for_cross_attention(student, cases):
    _pair(student, cases["attention/cross"])


@mha(points=2, probes=("attention-no-scale", "attention-wrong-scale", "attention-wrong-transpose",
                                   "attention-softmax-wrong-axis", "attention-returns-scores",
                                   "attention-wrong-value-product", "attention-scale-after-softmax"))
def test_attention_values(student, cases):
    expect_values(student, [cases["attention/cross"], cases["attention/self"], cases["attention/keys-as-wide"]])


@mha(points=1, probes=("softmax-unstable", "softmax-global-max"))
def test_attention_is_stable_for_large_scores(student, cases):
    expect_value(student, cases["attention/large-logits"])


@mha(points=1)
def test_attention_for_one_query_one_key_and_a_batch_of_one(student, cases):
    expect_sizes_of_one(student, [cases["attention/one-batch"], cases["attention/one-query"], cases["attention/one-key"]])


@mha(points=1)
def test_attention_weights_sum_to_one_over_keys(student, cases):
    case = cases["attention/cross"]
    _, weights = _pair(student, case)
    sums = weights.astype(np.float64).sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-5):
        failure = failure_from_value(case, student.invoke(case).value, student=student,
                                     reached=student.invoke(case).reached)
        worst = sums.flat[int(np.argmax(np.abs(sums - 1)))]
        failure.messages = (Message("rows_not_normalized", {"what": "weights", "value": f"{worst:.4g}"}),
                            *failure.messages)
        raise failure


@mha(points=1)
def test_identical_keys_get_equal_weights(student, cases):
    case = cases["attention/identical-keys"]
    _, weights = _pair(student, case)
    keys = weights.shape[-1]
    if not np.allclose(weights, 1.0 / keys, atol=1e-5):
        failure = failure_from_value(case, student.invoke(case).value, student=student,
                                     reached=student.invoke(case).reached)
        worst = weights.flat[int(np.argmax(np.abs(weights - 1.0 / keys)))]
        failure.messages = (Message("not_uniform", {"count": keys, "value": f"{worst:.4g}"}), *failure.messages)
        raise failure


@mha(points=1, probes=("attention-mutates-input",))
def test_attention_leaves_its_inputs_unchanged(student, cases):
    expect_unchanged(student, cases["attention/cross"])
