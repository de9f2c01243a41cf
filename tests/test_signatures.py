"""Signature rules on arrays, without a worker: each names a variant that no twin covers, and says
nothing of a right value (float32 or rounded alike).

The variants' values are computed here with plain NumPy, the way a student's code would compute them.
"""

import numpy as np
import pytest

from grader.assignments.multihead_attention.cases import hidden_cases, public_cases
from grader.assignments.multihead_attention.fitting import key_arrangements
from grader.grading.case import Raised, same_value
from grader.grading.checks import failure_from_error, failure_from_value
from grader.grading.findings import explain
from grader.sandbox.client import CallError, CallOutcome

PUBLIC = public_cases()


def _no_twin_matches(case, value):
    assert not any(same_value(value, twin) for _, _, twin in case.known_twins() if not isinstance(twin, Raised))


def _diagnosis(case, value):
    """(misconception, further misconceptions) the grader gives ``value``; no twin may explain it."""
    _no_twin_matches(case, value)
    failure = failure_from_value(case, value)
    return failure.misconception, {other.misconception for other in failure.others}


def _rows_shifted(x):
    return np.exp(x - x.max(axis=-1, keepdims=True))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---- softmax ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["softmax/2d", "softmax/4d", "softmax/square"])
def test_a_row_max_shift_with_a_whole_array_sum_is_the_wrong_axis(name):
    case = PUBLIC[name]
    e = _rows_shifted(case.args[0])
    assert _diagnosis(case, e / e.sum()) == ("softmax-wrong-axis", set())


def test_a_row_max_shift_with_sums_over_axis_0_is_the_wrong_axis():
    case = PUBLIC["softmax/4d"]
    e = _rows_shifted(case.args[0])
    assert _diagnosis(case, e / e.sum(axis=0)) == ("softmax-wrong-axis", set())


def test_a_softmax_over_the_last_two_axes_is_the_wrong_axis():
    case = PUBLIC["softmax/4d"]
    assert _diagnosis(case, _softmax(case.args[0], axis=(-2, -1))) == ("softmax-wrong-axis", set())


def test_rows_proportional_to_the_softmax_but_not_normalized_name_no_axis():
    case = PUBLIC["softmax/2d"]
    e = _rows_shifted(case.args[0])
    assert _diagnosis(case, e / np.exp(case.args[0]).sum())[0] == "numeric-mismatch"


# ---- attention ------------------------------------------------------------------------------------
def _attention(Q, K, V, *, keys=None, scale=None, axis=-1, product=None):
    d_k = Q.shape[-1]
    keys = np.swapaxes(K, -1, -2) if keys is None else keys
    scores = Q @ keys * (1 / np.sqrt(d_k) if scale is None else scale)
    weights = _softmax(scores, axis=axis)
    return (weights @ V if product is None else product(weights, V)), weights


def test_keys_reshaped_instead_of_transposed_are_a_wrong_transpose():
    case = PUBLIC["attention/cross"]
    Q, K, V = case.args
    B, H, S, d_k = K.shape
    assert _diagnosis(case, _attention(Q, K, V, keys=K.reshape(B, H, d_k, S))) == ("attention-wrong-transpose", set())


def test_keys_used_without_a_transpose_show_where_they_are_as_wide_as_a_head():
    case = PUBLIC["attention/keys-as-wide"]
    Q, K, V = case.args
    value = _attention(Q, K, V, keys=K, scale=1 / 3)  # with another scale than the twin's, too
    assert _diagnosis(case, value) == ("attention-wrong-transpose", {"attention-wrong-scale"})
    assert [finding.misconception for finding in explain(case, _attention(Q, K, V, keys=K))] == [
        "attention-wrong-transpose"]


@pytest.mark.parametrize("divisor, named", [(8.0, "8"), (np.sqrt(2), "sqrt(B)"), (3.0, "3")])
def test_scores_divided_by_any_other_factor_are_a_wrong_scale(divisor, named):
    case = PUBLIC["attention/cross"]
    failure = failure_from_value(case, _attention(*case.args, scale=1 / divisor))
    assert failure.misconception == "attention-wrong-scale"
    assert named in failure.messages[0].params["divisor"]


def test_an_einsum_that_sums_the_values_apart_is_a_value_product_mistake():
    case = PUBLIC["attention/cross"]
    Q, K, V = case.args
    out, weights = _attention(Q, K, V)
    typo = np.einsum("bhqk,bhvd->bhqd", weights, V)
    assert _diagnosis(case, (typo, weights)) == ("attention-wrong-value-product", set())


def test_weights_normalized_over_the_whole_matrix_are_an_attention_axis_mistake():
    case = PUBLIC["attention/cross"]
    failure = failure_from_value(case, _attention(*case.args, axis=(-2, -1)))
    assert failure.misconception == "attention-softmax-wrong-axis"
    # the same evidence may be the student's softmax: the runner prefers it when softmax fails its own checks
    assert {(other.misconception, other.root_cause) for other in failure.alternatives} >= {
        ("softmax-wrong-axis", "softmax")}


def test_two_mistakes_in_one_line_are_both_named():
    case = PUBLIC["attention/cross"]
    Q, K, V = case.args
    B, H, S, d_k = K.shape
    value = _attention(Q, K, V, keys=K.reshape(B, H, d_k, S), scale=1.0)
    assert _diagnosis(case, value) == ("attention-wrong-transpose", {"attention-no-scale"})


def test_no_scale_and_a_scaled_value_product_are_both_named():
    case = PUBLIC["attention/cross"]
    value = _attention(*case.args, scale=1.0, product=lambda w, V: w @ (V / 3.0))  # 3: no sqrt(d_k) of any size
    assert _diagnosis(case, value) == ("attention-no-scale", {"attention-wrong-value-product"})


def _weights_scaled_after_the_softmax(case, arrangement):
    Q, K, V = case.args
    weights = _softmax(Q @ arrangement(K)) / np.sqrt(Q.shape[-1])
    return weights @ V, weights


def test_weights_divided_after_the_softmax_are_one_mistake_not_a_wider_axis_set():
    # B = 2 and d_k = 4: rows summing to 1/2 sum to 1 over (B, S), by the coincidence of the sizes; the rows all
    # summing to one constant is the simpler explanation, and the only one that holds for every size
    case = PUBLIC["attention/cross"]
    B, H, S, d_k = case.args[1].shape
    value = _weights_scaled_after_the_softmax(case, lambda K: K.reshape(B, H, d_k, S))
    assert np.allclose(value[1].sum(axis=(0, 3)), 1.0)
    assert _diagnosis(case, value) == ("attention-wrong-transpose", {"attention-scale-after-softmax"})


def test_an_output_divided_after_the_softmax_of_float32_scores_is_the_scale_after_the_softmax():
    case = PUBLIC["attention/cross"]
    Q, K, V = (array.astype(np.float32) for array in case.args)
    weights = _softmax(Q @ np.swapaxes(K, -1, -2))
    value = (weights @ V / np.float32(np.sqrt(Q.shape[-1])), weights)
    findings = explain(case, value)
    assert [finding.misconception for finding in findings] == ["attention-scale-after-softmax"]


def test_unscaled_scores_returned_as_weights_show_both_mistakes():
    case = PUBLIC["attention/cross"]
    Q, K, V = case.args
    raw = Q @ np.swapaxes(K, -1, -2)
    value = (_softmax(raw) @ V, raw)
    assert _diagnosis(case, value) == ("attention-returns-scores", {"attention-no-scale"})


def test_every_arrangement_of_the_keys_is_a_distinct_rearrangement_of_their_entries():
    K = PUBLIC["attention/cross"].args[1]
    arrangements = key_arrangements(K)
    assert arrangements[0][0] == "right" and len(arrangements) > 20
    assert all(np.array_equal(np.sort(keys, axis=None), np.sort(K, axis=None)) for _, keys in arrangements)


# ---- split_heads / combine_heads ------------------------------------------------------------------
def test_a_split_with_every_axis_reversed_is_split_heads_wrong_axes():
    case = PUBLIC["split/cross"]
    x = case.args[0]
    B, T, D = x.shape
    H = case.expected.shape[1]
    assert _diagnosis(case, x.reshape(B, T, H, D // H).transpose()) == ("split-heads-wrong-axes", set())


def test_heads_concatenated_in_a_rotated_order_are_combine_heads_wrong_order():
    case = PUBLIC["combine/cross"]
    x = case.args[0]
    value = np.concatenate([x[:, (h + 1) % x.shape[1]] for h in range(x.shape[1])], axis=-1)
    assert _diagnosis(case, value) == ("combine-heads-wrong-order", set())


# ---- forward ------------------------------------------------------------------------------------
def _forward(case, *, scale=None, output=True):
    Q, K, V = case.args
    W = case.weights
    H = case.init[1]

    def heads(x):
        B, T, D = x.shape
        return x.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)

    out, weights = _attention(heads(Q @ W["W_Q"]), heads(K @ W["W_K"]), heads(V @ W["W_V"]), scale=scale)
    B, _, T, d_k = out.shape
    combined = out.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)
    return (combined @ W["W_O"] if output else combined), weights


def test_no_scale_and_no_output_projection_are_each_named_by_their_own_evidence():
    case = PUBLIC["forward/cross-weights"]
    failure = failure_from_value(case, _forward(case, scale=1.0, output=False), reached=("forward",
                                 "split_heads", "scaled_dot_product_attention", "softmax", "combine_heads"))
    assert failure.misconception == "mha-no-output-projection" and failure.root_cause == "forward"
    assert [(other.misconception, other.root_cause) for other in failure.others] == [
        ("attention-no-scale", "scaled_dot_product_attention")]


def test_a_mistake_of_a_function_the_call_never_entered_is_in_the_checked_functions_own_code():
    case = PUBLIC["forward/cross-weights"]
    failure = failure_from_value(case, _forward(case, scale=1.0), reached=("forward",))  # attention inlined
    assert (failure.misconception, failure.root_cause) == ("attention-no-scale", "forward")


# ---- the companion: right with S = T, wrong with S != T -------------------------------------------
class Companions:
    """A student whose calls return the expected value on the listed cases only."""

    def __init__(self, right):
        self.right = set(right)

    def invoke(self, case):
        return CallOutcome(value=case.expected if case.id in self.right else None)


def test_right_for_self_attention_and_raising_otherwise_is_the_query_length_mistake():
    case = PUBLIC["forward/cross"]
    outcome = CallOutcome(error=CallError("ValueError", "cannot reshape array of size 168 into shape (2,5,3,4)"))
    failure = failure_from_error("forward", outcome, case, student=Companions({"forward/same-length"}))
    assert failure.misconception == "mha-kv-uses-query-length"


def test_wrong_for_self_attention_too_is_not_the_query_length_mistake():
    case = PUBLIC["attention/cross"]
    outcome = CallOutcome(error=CallError("ValueError", "some error"))
    assert failure_from_error(case.function, outcome, case, student=Companions(())).misconception == "error"


# ---- nothing for what is right --------------------------------------------------------------------
@pytest.mark.parametrize("cases", [PUBLIC, hidden_cases(5)], ids=["public", "hidden"])
def test_right_values_in_float32_or_rounded_give_no_finding(cases):
    for case in cases.values():
        for value in (case.expected, _cast(case.expected, np.float32), _cast(case.expected, np.float16)):
            if same_value(value, case.expected):
                assert explain(case, value) == [], case.id


def _cast(value, dtype):
    return tuple(_cast(item, dtype) for item in value) if isinstance(value, tuple) else value.astype(dtype)


def test_the_size_one_cases_name_no_mistake():
    case = PUBLIC["attention/one-key"]
    Q, K, V = case.args
    value = _attention(Q, K, V, axis=-2)
    assert failure_from_value(case, value).misconception in ("numeric-mismatch", "wrong-shape")


# ---- the block's steps inside forward; overflow on large scores ------------------------------------------
def _layer_output(case):
    """The layer's own output for ``case`` (forward's expected value, without its weights)."""
    return case.expected[0] if isinstance(case.expected, tuple) else case.expected


@pytest.mark.parametrize("name", ["forward/cross", "forward/cross-weights"])
def test_a_layer_norm_of_the_output_with_another_epsilon_is_named(name):
    case = PUBLIC[name]
    y = _layer_output(case).astype(np.float32)
    out = (y - y.mean(-1, keepdims=True)) / (y.std(-1, keepdims=True) + np.float32(1e-3))
    value = (out, case.expected[1]) if isinstance(case.expected, tuple) else out
    assert _diagnosis(case, value) == ("mha-adds-layer-norm", set())


def test_add_and_norm_names_the_residual_and_the_layer_norm():
    case = PUBLIC["forward/cross"]
    y = _layer_output(case) + case.args[0]
    value = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-6)
    assert _diagnosis(case, value) == ("mha-adds-residual", {"mha-adds-layer-norm"})


def test_an_output_that_is_no_normalization_names_no_block_step():
    case = PUBLIC["forward/cross"]
    y = _layer_output(case)
    assert explain(case, 2.0 * (y - y.mean(-1, keepdims=True))) == []


def _float32_attention(case, softmax):
    Q, K, V = (array.astype(np.float32) for array in case.args)
    weights = softmax(Q @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(Q.shape[-1])))
    return weights @ V, weights


def test_float32_attention_that_never_shifts_overflows_as_unstable():
    case = PUBLIC["attention/large-logits"]
    with np.errstate(all="ignore"):
        value = _float32_attention(case, lambda s: np.exp(s) / np.exp(s).sum(-1, keepdims=True))
    assert failure_from_value(case, value).misconception == "softmax-unstable"


def test_float32_attention_shifted_by_one_global_max_underflows_as_global_max():
    case = PUBLIC["attention/large-logits"]
    with np.errstate(all="ignore"):
        value = _float32_attention(case, lambda s: np.exp(s - s.max()) / np.exp(s - s.max()).sum(-1, keepdims=True))
    assert failure_from_value(case, value).misconception == "softmax-global-max"


def test_zeros_divided_by_sums_over_the_batch_are_no_instability():
    # shifted right, summed over the batch: one-hot rows give 0/0 where every batch entry underflowed, and the
    # ordinary rows are wrong too, so the NaN is no overflow of an unshifted exponential
    case = PUBLIC["attention/large-logits"]

    def over_batch(s):
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(axis=0)
    with np.errstate(all="ignore"):
        value = _float32_attention(case, over_batch)
    assert not np.isfinite(value[1]).all()
    assert failure_from_value(case, value).misconception not in ("softmax-unstable", "softmax-global-max")


def test_stability_inputs_are_never_square():
    for cases in (PUBLIC, hidden_cases(7)):
        for name, case in cases.items():
            if "stability" in name or "large-logits" in name:
                for argument in case.args:
                    assert argument.ndim < 2 or argument.shape[-1] != argument.shape[-2], name


def _weights_of(rng, Q, K, arrangement, scale, axes, kind):
    """Weights a student's attention could return: a softmax of ``scale * Q @ keys`` over ``axes`` (keys in
    the given arrangement), the scores themselves, float32 rounding of either, or noise that fits nothing."""
    from grader.assignments.multihead_attention.fitting import key_arrangements

    raw = Q @ key_arrangements(K)[arrangement][1]
    if kind == "noise":
        return rng.uniform(0.01, 1.0, raw.shape)
    if kind == "scores":
        return scale * raw
    logits = scale * raw
    powers = np.exp(logits - logits.max(axis=axes, keepdims=True))
    weights = powers / powers.sum(axis=axes, keepdims=True)
    return weights.astype(np.float32) if kind == "float32" else weights


def test_the_screened_fits_find_what_fitting_every_arrangement_finds(monkeypatch):
    """The weight fit and the returned-scores test screen every arrangement of K at once and fit alone only
    those near: on 160 drawn inputs (arrangements, scales, normalized axes, float32, scores, noise, keys
    constant along S) they find exactly what testing every arrangement alone finds, alpha and all."""
    from grader.assignments.multihead_attention import fitting

    rng = np.random.default_rng(7)
    inputs = []
    for index in range(160):
        B, H, T, S, d_k = 2, 3, int(rng.integers(3, 6)), int(rng.integers(3, 8)), int(rng.integers(2, 5))
        Q, K = rng.normal(size=(B, H, T, d_k)), rng.normal(size=(B, H, S, d_k))
        if index % 8 == 0:
            K = np.repeat(K[:, :, :1], S, axis=2)  # identical keys: scores constant along S
        axes = [(3,), (2,), (2, 3), (0,), (1, 3), (0, 1, 2, 3)][index % 6]
        kind = ["softmax", "softmax", "float32", "scores", "noise"][index % 5]
        arrangement = int(rng.integers(0, len(fitting.key_arrangements(K))))
        weights = _weights_of(rng, Q, K, arrangement, float(rng.choice([0.5, 1.0, 1 / np.sqrt(d_k), 2.0])), axes,
                              kind)
        inputs.append((Q, K, weights))
    screened = [(fitting.fit_weights(Q, K, w), fitting.returned_scores(Q, K, w)) for Q, K, w in inputs]
    monkeypatch.setattr(fitting, "_candidates", lambda logs, stacked, axes, **_: list(range(len(stacked))))
    monkeypatch.setattr(fitting, "_scaled_candidates", lambda values, stacked: list(range(len(stacked))))
    monkeypatch.setattr(fitting, "_ARRANGED_KEPT", 0)
    every = [(fitting.fit_weights(Q, K, w), fitting.returned_scores(Q, K, w)) for Q, K, w in inputs]

    def same(a, b):
        if a is None or b is None:
            return a is b
        if isinstance(a, tuple):
            return a[:2] == b[:2] and np.array_equal(a[2], b[2])
        return (a.arrangement, a.alpha, a.axes) == (b.arrangement, b.alpha, b.axes) and np.array_equal(a.raw, b.raw)

    assert all(same(a, b) for pair, other in zip(screened, every) for a, b in zip(pair, other))
    found = sum(fit is not None for fit, _ in every)
    assert found > 60 and sum(scores is not None for _, scores in every) > 20, found


def test_right_in_every_respect_is_weights_findings_finding_nothing():
    """The one fit ``right_in_every_respect`` makes answers as ``weights_findings(...) == []`` does on 240 drawn
    weights: right ones (float64 and float32), at other scales, over other axes, scaled after the softmax, in
    other arrangements, scores and noise."""
    from grader.assignments.multihead_attention import fitting

    rng = np.random.default_rng(11)
    answers = []
    for index in range(240):
        B, H, T, S, d_k = 2, 3, int(rng.integers(3, 6)), int(rng.integers(3, 8)), int(rng.integers(2, 5))
        Q, K = rng.normal(size=(B, H, T, d_k)), rng.normal(size=(B, H, S, d_k))
        right_scale = 1 / np.sqrt(d_k)
        arrangement = 0 if index % 3 else int(rng.integers(0, len(fitting.key_arrangements(K))))
        scale = right_scale if index % 4 else float(rng.choice([0.5, 1.0, 2.0]))
        axes = (3,) if index % 5 else [(2,), (2, 3), (0,), (1, 3)][index % 4]
        kind = ["softmax", "softmax", "float32", "scores", "noise", "softmax"][index % 6]
        weights = _weights_of(rng, Q, K, arrangement, scale, axes, kind)
        if index % 7 == 0:
            weights = weights * 0.5  # scaled after the softmax
        found = fitting.weights_findings(Q, K, weights, function="forward", sizes=fitting.attention_sizes(Q, K))
        answers.append((fitting.right_in_every_respect(Q, K, weights), found == []))
    assert all(quick == slow for quick, slow in answers)
    assert 40 < sum(slow for _, slow in answers) < 200
