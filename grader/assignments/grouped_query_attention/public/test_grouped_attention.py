"""Public checks of GroupedQueryAttention: the constructor and forward."""

from grader.content.messages import Message
from grader.grading.checks import CheckFailure, did_not_return, expect_value, failure_from_error, is_missing
from grader.grading.marker import mha

pytestmark = mha(visibility="public")
CLASS = "GroupedQueryAttention"


def _unless_still_the_stub(student, cases):
    """A stub class raises NotImplementedError in forward: say so rather than blame the constructor."""
    forward = student.invoke(cases["forward/grouped"])
    if forward.error is not None and forward.error.type == "NotImplementedError":
        raise CheckFailure(Message("not_implemented", {"function": CLASS}), misconception="not-implemented")


@mha(points=2, function="__init__", probes=("gqa-no-divisibility-check",))
def test_constructor_rejects_query_heads_the_kv_heads_do_not_divide(student, cases):
    for d_model, heads, kv_heads in ((24, 6, 4), (12, 4, 3)):
        outcome = student.sandbox.call_method(CLASS, init=(d_model, heads, kv_heads))
        if outcome.error is None:
            _unless_still_the_stub(student, cases)
            raise CheckFailure(Message("kv_heads_not_rejected", {"heads": heads, "kv_heads": kv_heads}),
                               misconception="gqa-no-divisibility-check")
        if did_not_return(outcome) or is_missing(outcome):
            raise failure_from_error("__init__", outcome)
    outcome = student.sandbox.call_method(CLASS, init=(24, 6, 2))
    if outcome.error is not None:
        if did_not_return(outcome) or is_missing(outcome) or outcome.error.type == "NotImplementedError":
            raise failure_from_error("__init__", outcome)
        raise CheckFailure(Message("raised", {"function": f"{CLASS}(24, 6, 2)", "type": outcome.error.type,
                                              "message": outcome.error.message, "location": ""}),
                           misconception="error", outcome="error")


@mha(points=2, function="__init__", probes=("gqa-full-kv-projections",))
def test_key_and_value_projections_produce_only_the_kv_heads(student, cases):
    case = cases["init/shapes"]
    outcome = student.invoke(case)
    if outcome.error is not None:
        _unless_still_the_stub(student, cases)
        raise failure_from_error("__init__", outcome, case)
    got = [getattr(value, "shape", None) for value in outcome.value]
    expected = [value.shape for value in case.expected]
    if got == expected:
        return
    _unless_still_the_stub(student, cases)
    names = ("W_Q", "W_K", "W_V", "W_O")
    wrong = next(position for position in range(4) if got[position] != expected[position])
    full = got[1] == got[2] == case.expected[0].shape
    raise CheckFailure(Message("wrong_shape", {"what": f"{case.call_text}.{names[wrong]}", "got": got[wrong],
                                               "expected": expected[wrong], "legend": case.legend[wrong]}),
                       misconception="gqa-full-kv-projections" if full else "wrong-shape")


@mha(points=4, function="forward", probes=("gqa-tile-not-repeat",))
def test_forward_shares_each_kv_head_within_its_group(student, cases):
    expect_value(student, cases["forward/grouped"])
    expect_value(student, cases["forward/grouped-weights"])


@mha(points=2, function="forward")
def test_one_kv_head_is_multi_query_attention(student, cases):
    expect_value(student, cases["forward/multi-query"])


@mha(points=1, function="forward")
def test_as_many_kv_heads_as_query_heads_is_multi_head_attention(student, cases):
    expect_value(student, cases["forward/multi-head"])
