"""Public checks of MultiHeadAttention: the constructor and forward."""

import numpy as np

from grader.content.messages import Message
from grader.grading.checks import (CheckFailure, did_not_return, expect_unchanged, expect_value, failure_from_error,
                                   failure_from_value, is_missing)
from grader.grading.marker import mha
from grader.grading.sizes_of_one import expect_sizes_of_one

pytestmark = mha(visibility="public")


@mha(points=2, function="__init__", probes=("mha-no-divisibility-check",))
def test_constructor_rejects_a_width_the_heads_do_not_divide(student, cases):
    # coprime sizes first, then sizes that share a factor (12 and 8 share 4): a check that only refuses
    # coprime sizes (a gcd or a reduced fraction) still lets 12 features be cut into 8 heads
    for d_model, heads in ((10, 3), (12, 5), (12, 8)):
        outcome = student.construct("MultiHeadAttention", d_model, heads)
        if outcome.error is None:
            forward = student.invoke(cases["forward/cross"])
            if forward.error is not None and forward.error.type == "NotImplementedError":
                # the class is still the stub: say so rather than blame a missing check
                raise CheckFailure(Message("accepted_while_unfinished", {"d_model": d_model, "num_heads": heads}),
                                   misconception="not-implemented")
            raise CheckFailure(Message("not_rejected", {"d_model": d_model, "num_heads": heads}),
                               misconception="mha-no-divisibility-check")
        if did_not_return(outcome):
            raise failure_from_error("__init__", outcome)
    outcome = student.construct("MultiHeadAttention", 12, 3)
    if outcome.error is not None:
        if did_not_return(outcome) or is_missing(outcome):
            raise failure_from_error("__init__", outcome)
        raise CheckFailure(Message("rejected_valid", {"d_model": 12, "num_heads": 3, "type": outcome.error.type,
                                                      "message": outcome.error.message}), misconception="error",
                           outcome="error")


@mha(points=1, function="forward")
def test_forward_shape_for_cross_attention(student, cases):
    case = cases["forward/cross"]
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise failure_from_error("forward", outcome, case, student=student)
    if not isinstance(outcome.value, np.ndarray) or outcome.value.shape != case.expected.shape:
        raise failure_from_value(case, outcome.value, student=student, reached=outcome.reached)


@mha(points=2, function="forward",
                 probes=("mha-no-output-projection", "mha-wrong-projection", "mha-ignores-key-value",
                         "mha-kv-uses-query-length", "mha-adds-residual", "mha-adds-layer-norm"))
def test_forward_values_for_cross_attention(student, cases):
    expect_value(student, cases["forward/cross"])


@mha(points=1, function="forward", probes=("softmax-unstable", "softmax-global-max"))
def test_forward_is_stable_for_large_scores(student, cases):
    expect_value(student, cases["forward/large-logits"])


@mha(points=2, function="forward", probes=("mha-wrong-weights-returned",))
def test_forward_returns_per_head_weights_when_asked(student, cases):
    expect_value(student, cases["forward/cross-weights"])


@mha(points=1, function="forward")
def test_forward_for_self_attention(student, cases):
    expect_value(student, cases["forward/self-weights"])


@mha(points=1, function="forward")
def test_one_head_is_plain_attention_of_the_projections(student, cases):
    case = cases["forward/one-head"]
    try:
        expect_value(student, case)
    except CheckFailure as failure:
        value = student.invoke(case).value
        if isinstance(value, tuple) and value and isinstance(value[0], np.ndarray) \
                and value[0].shape == case.expected[0].shape:
            difference = f"{np.abs(value[0] - case.expected[0]).max():.3g}"
            failure.messages = (Message("single_head", {"difference": difference}), *failure.messages)
        raise


@mha(points=1, function="forward")
def test_forward_for_one_query_one_key_and_a_batch_of_one(student, cases):
    expect_sizes_of_one(student, [cases["forward/one-batch"], cases["forward/one-query"], cases["forward/one-key"]])


@mha(points=1, function="forward", probes=("mha-mutates-input",))
def test_forward_leaves_its_inputs_unchanged(student, cases):
    expect_unchanged(student, cases["forward/cross"])
