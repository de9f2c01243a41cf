"""Signatures: a catalogued mistake recognized by what it does to the values, not by one spelling of it.

The twins (``grader/assignments``) recognize a mistake written the way we
wrote it. These rules look at the student's own output and ask what it is:

- softmax: does it sum to 1 over some axes other than the last (the
  normalizer is taken over the wrong axes, however it was written)?
- attention weights: log-weights are scores up to a constant per normalized
  slice, so fit them as ``alpha * Q @ K' + c``, ``K'`` being K's entries in
  any arrangement a reshape or transpose gives. The arrangement tells a
  transpose mistake, ``alpha`` a scale mistake, the slices ``c`` is constant
  on (and what sums to 1) an axis mistake; weights that are no softmax but the
  scores themselves are returned scores.
- attention output: right or explained weights, but an output that is not
  those weights times V, is a value-product mistake.
- split/combine: the output is x's entries in another layout (no
  transpose, dealt round-robin, axes in another order, heads reordered).
- forward, when it returns its weights: the weights are analysed like
  attention's (on the reference's projected heads, shipped as the case's
  ``evidence``), and the output is compared with what the student's *own*
  weights give through the rest of the layer, with or without ``W_O``. Two
  mistakes along the path are then each shown by their own evidence.

Every rule returns findings only for what the values show; nothing here
affects a score. The rules do plain algebra on arrays and need no reference
code, so they run in a student release too.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from grader.grading.case import Case, same_value

FIT_TOLERANCE = 1e-4  # relative residual of a fit: float32 weights fit to about 1e-7
SUM_TOLERANCE = 1e-4


def message_data(key: str, params: dict) -> tuple[str, dict]:
    """A message as data, ``(key, params)``: ``grader.grading.checks`` makes it a Message."""
    return key, params


@dataclass(frozen=True)
class Finding:
    """One mistake the values show: its id, the function whose code has it, and the evidence."""

    misconception: str
    function: str
    evidence: tuple  # (message key, params): what in the values shows it
    # the same evidence explained by a mistake in another function: ((misconception, function), ...)
    alternatives: tuple = ()


def explain(case: Case, got) -> list[Finding]:
    """The findings of the first of the case's signature rules that explains ``got``."""
    for name in case.signatures:
        findings = RULES[name](case, got)
        if findings:
            return findings
    return []


# ---- shared algebra -------------------------------------------------------------------------------
def _array(value, shape=None) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and (shape is None or value.shape == shape)


def _axis_sets(ndim: int, first: tuple = ()) -> list[tuple[int, ...]]:
    """Every non-empty set of axes, ``first`` ones first, then by size."""
    every = [axes for size in range(1, ndim + 1) for axes in itertools.combinations(range(ndim), size)]
    return [axes for axes in first if axes in every] + [axes for axes in every if axes not in first]


def _sums_to_one(values: np.ndarray, axes) -> bool:
    return bool(np.allclose(values.sum(axis=axes), 1.0, rtol=0.0, atol=SUM_TOLERANCE))


def axes_code(axes: tuple[int, ...], ndim: int, letters: tuple[str, ...] | None = None) -> str:
    """``(2,)`` -> ``axis=2 (T)``; every axis -> ``axis=None``: the way NumPy code names them."""
    if len(axes) == ndim and ndim > 1:
        return "axis=None"
    named = f" ({', '.join(letters[axis] for axis in axes)})" if letters else ""
    return (f"axis={axes[0]}" if len(axes) == 1 else f"axis={axes}") + named


def _fit(logs: np.ndarray, raw: np.ndarray, axes) -> tuple[float, float] | None:
    """``(alpha, residual)`` of ``logs ~ alpha * raw + c`` with ``c`` constant along ``axes``, or None."""
    centred_logs = logs - logs.mean(axis=axes, keepdims=True)
    centred_raw = raw - raw.mean(axis=axes, keepdims=True)
    spread, raw_spread = float(np.linalg.norm(centred_logs)), float(np.linalg.norm(centred_raw))
    if spread < 1e-9 or raw_spread < 1e-9 * max(float(np.linalg.norm(raw)), 1e-300):
        return None  # nothing varies: uniform weights, or scores constant where the weights are normalized
    alpha = float((centred_logs * centred_raw).sum()) / raw_spread ** 2
    return alpha, float(np.linalg.norm(centred_logs - alpha * centred_raw)) / spread


def _exponential_rows(z: np.ndarray) -> np.ndarray:
    """A softmax over the last axis, for what-if outputs (never compared with a student's softmax)."""
    peak = np.max(z, axis=-1, keepdims=True)
    powers = np.exp(z - peak)
    return powers / powers.sum(axis=-1, keepdims=True)


# ---- softmax ----------------------------------------------------------------------------------
def softmax_normalizer(case: Case, got) -> list[Finding]:
    """Rows that do not sum to 1 while the values sum to 1 over other axes: the wrong normalizer."""
    expected = case.expected
    if not _array(got, expected.shape) or got.ndim < 2:
        return []
    values = got.astype(np.float64)
    if not np.isfinite(values).all() or (values < 0).any():
        return []
    last = values.ndim - 1
    if _sums_to_one(values, last):
        return []
    for axes in _axis_sets(values.ndim):
        if axes != (last,) and _sums_to_one(values, axes):
            return [Finding("softmax-wrong-axis", case.function,
                            message_data("sig_normalized_over", {"what": case.call_text or case.function,
                                                            "axes": axes_code(axes, values.ndim)}))]
    return []


# ---- attention weights ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoresFit:
    """The student's weights as ``normalize(alpha * Q @ keys)`` over ``axes``."""

    arrangement: str  # "right", or how K's entries were arranged
    raw: np.ndarray  # Q @ keys, (B, H, T, S)
    alpha: float
    axes: tuple[int, ...]


def key_arrangements(K: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """K's entries laid out as (B, H, d_k, S) in every way one reshape and one transpose give; the right one first."""
    B, H, S, d_k = K.shape
    target = (B, H, d_k, S)
    found: list[tuple[str, np.ndarray]] = [("right", np.swapaxes(K, -1, -2))]
    seen = {found[0][1].tobytes()}

    def add(label: str, keys: np.ndarray) -> None:
        if keys.shape == target and keys.tobytes() not in seen:
            seen.add(keys.tobytes())
            found.append((label, keys))

    # with S = d_k a reshape keeps K as it is: K used without any transpose
    add("K (not transposed)" if S == d_k else "K.reshape(B, H, d_k, S)", K.reshape(target))
    orders = list(itertools.permutations(range(4)))
    for order in orders:
        add(f"K.transpose{order}", K.transpose(order))
    for order in orders:
        add(f"K.transpose{order}.reshape(B, H, d_k, S)", np.ascontiguousarray(K.transpose(order)).reshape(target))
    for order in orders:
        shape = [0, 0, 0, 0]
        for position, axis in enumerate(order):
            shape[axis] = target[position]
        add(f"K.reshape{tuple(shape)}.transpose{order}", K.reshape(shape).transpose(order))
    return found


def fit_weights(Q: np.ndarray, K: np.ndarray, weights) -> ScoresFit | None:
    """The arrangement of K, the scale and the normalized axes that give ``weights``, or None."""
    if not _array(weights, Q.shape[:-1] + (K.shape[-2],)):
        return None
    values = weights.astype(np.float64)
    if not np.isfinite(values).all() or (values <= 0).any():
        return None
    logs = np.log(values)
    raws = [(label, Q.astype(np.float64) @ keys) for label, keys in key_arrangements(K.astype(np.float64))]
    last = values.ndim - 1
    for axes in _axis_sets(values.ndim, first=((last,), (last - 1,), (last - 1, last))):
        for label, raw in raws:
            fitted = _fit(logs, raw, axes)
            if fitted is not None and fitted[1] < FIT_TOLERANCE and fitted[0] > 0:
                return ScoresFit(label, raw, fitted[0], axes)
    return None


def returned_scores(Q: np.ndarray, K: np.ndarray, weights) -> tuple[str, float, np.ndarray] | None:
    """``(arrangement, alpha, raw)`` when ``weights`` are ``alpha * Q @ keys`` themselves, no softmax."""
    if not _array(weights, Q.shape[:-1] + (K.shape[-2],)) or not np.isfinite(weights).all():
        return None
    values = weights.astype(np.float64)
    for label, keys in key_arrangements(K.astype(np.float64)):
        raw = Q.astype(np.float64) @ keys
        size = float((raw * raw).sum())
        if size < 1e-300:
            continue
        alpha = float((values * raw).sum()) / size
        if np.linalg.norm(values - alpha * raw) < FIT_TOLERANCE * max(float(np.linalg.norm(values)), 1e-300):
            return label, alpha, raw
    return None


def _divisor_text(alpha: float, sizes: dict[str, int]) -> str:
    """``1/alpha`` named when it is a size or a square root of one: "d_k = 4", "sqrt(S) = 2.646", "8"."""
    divisor = 1.0 / alpha
    named = [(name, float(value)) for name, value in sizes.items()] + [
        (f"sqrt({name})", float(np.sqrt(value))) for name, value in sizes.items()]
    for name, value in named:
        if abs(value - divisor) <= 1e-3 * value:
            return f"{name} = {value:.4g}"
    return f"{divisor:.4g}"


def weights_findings(Q: np.ndarray, K: np.ndarray, weights, *, function: str, sizes: dict[str, int],
                     axis_letters=("B", "H", "T", "S")) -> list[Finding] | None:
    """What the weights show about the scores, the scale and the normalization; None when nothing fits.

    An empty list means the weights are explained and right in every respect
    the rules see.
    """
    width = Q.shape[-1]  # d_k
    right = 1.0 / np.sqrt(width)
    fit = fit_weights(Q, K, weights)
    if fit is None:
        returned = returned_scores(Q, K, weights)
        if returned is None:
            return None
        label, alpha, _ = returned
        findings = [Finding("attention-returns-scores", function, message_data("sig_weights_are_scores", {}))]
        if label != "right":
            findings.append(Finding("attention-wrong-transpose", function,
                                    message_data("sig_keys_arranged", {"arrangement": label})))
        return findings
    findings = []
    if fit.arrangement != "right":
        findings.append(Finding("attention-wrong-transpose", function,
                                message_data("sig_keys_arranged", {"arrangement": fit.arrangement})))
    values = weights.astype(np.float64)
    last = values.ndim - 1
    rescaled = None
    over = None
    if fit.axes == (last,):
        sums = values.sum(axis=last)
        if not np.allclose(sums, 1.0, rtol=0.0, atol=SUM_TOLERANCE):
            larger = [axes for axes in _axis_sets(values.ndim) if last in axes and len(axes) > 1]
            over = next((axes for axes in larger if _sums_to_one(values, axes)), None)
            if over is None and np.allclose(sums, sums.flat[0], rtol=SUM_TOLERANCE, atol=0.0):
                rescaled = float(sums.flat[0])
            elif over is None:
                return findings or None
    elif _sums_to_one(values, fit.axes):
        over = fit.axes
    else:
        return findings or None
    if rescaled is not None:
        findings.append(Finding("attention-wrong-scale", function, message_data("sig_weights_rescaled", {
            "total": f"{rescaled:.4g}"})))
    if not abs(fit.alpha - right) <= 1e-3 * right and not (rescaled is not None and abs(fit.alpha - 1) <= 1e-3):
        if abs(fit.alpha - 1.0) <= 1e-3:
            findings.append(Finding("attention-no-scale", function, message_data("sig_scores_unscaled", {
                "right": f"{np.sqrt(width):.4g}"})))
        else:
            findings.append(Finding("attention-wrong-scale", function, message_data("sig_scores_scaled", {
                "divisor": _divisor_text(fit.alpha, sizes), "right": f"{np.sqrt(width):.4g}"})))
    if over is not None:
        findings.append(Finding("attention-softmax-wrong-axis", function,
                                message_data("sig_weights_normalized_over", {
                                    "axes": axes_code(over, values.ndim, axis_letters)}),
                                alternatives=(("softmax-wrong-axis", "softmax"),)))
    return findings


def _attention_sizes(Q: np.ndarray, K: np.ndarray) -> dict[str, int]:
    B, H, T, d_k = Q.shape
    return {"d_k": d_k, "D": H * d_k, "S": K.shape[-2], "T": T, "H": H, "B": B}


def _output_findings(Q, K, V, weights, out, *, weights_right: bool, function: str) -> list[Finding]:
    """A wrong output next to right or explained weights: is it those weights times V?"""
    if weights_right and not _array(out):
        return []
    if _array(out) and same_value(out, weights.astype(np.float64) @ V):
        return []  # the output follows the weights: whatever is wrong is in the weights
    returned = returned_scores(Q, K, weights)
    if returned is not None and _array(out):
        _, alpha, raw = returned  # the weights are the scores: the output shows how the student scaled them
        right = 1.0 / np.sqrt(Q.shape[-1])
        for factor, finding in ((right, None), (1.0, Finding("attention-no-scale", function,
                                                             message_data("sig_output_unscaled", {}))),
                                (alpha, Finding("attention-wrong-scale", function, message_data("sig_scores_scaled", {
                                    "divisor": _divisor_text(alpha, _attention_sizes(Q, K)),
                                    "right": f"{np.sqrt(Q.shape[-1]):.4g}"})))):
            if same_value(out, _exponential_rows(factor * raw) @ V):
                return [finding] if finding is not None else []
    key = "sig_output_not_weights_times_values" if weights_right else "sig_output_not_own_weights_times_values"
    return [Finding("attention-wrong-value-product", function, message_data(key, {}))]


def attention(case: Case, got) -> list[Finding]:
    """(out, weights) of scaled dot-product attention: the weights' signature, then the output's."""
    Q, K, V = (np.asarray(item, dtype=np.float64) for item in case.args[:3])
    expected_out, expected_weights = case.expected
    if not (isinstance(got, tuple) and len(got) == 2 and _array(got[1], expected_weights.shape)):
        return []
    out, weights = got
    findings: list[Finding] = []
    weights_right = same_value(weights, expected_weights)
    if not weights_right:
        found = weights_findings(Q, K, weights, function=case.function, sizes=_attention_sizes(Q, K))
        if found is None:
            return []
        findings += found
    if not same_value(out, expected_out):
        findings += _output_findings(Q, K, V, weights, out, weights_right=weights_right, function=case.function)
    return findings


# ---- split_heads / combine_heads ----------------------------------------------------------------
def heads_layout(case: Case, got) -> list[Finding]:
    """split_heads' output as x's entries in another layout: no transpose, dealt round-robin, wrong axes."""
    x = np.asarray(case.args[0])
    expected = case.expected
    if not _array(got) or got.size != x.size or x.ndim != 3:
        return []
    B, T, D = x.shape
    H, d_k = expected.shape[1], expected.shape[3]
    blocks = x.reshape(B, T, H, d_k)  # head h owns the features h*d_k ... (h+1)*d_k - 1
    dealt = np.swapaxes(x.reshape(B, T, d_k, H), 2, 3)  # head h owns the features h, h+H, h+2H ...
    layouts = [(("split-heads-no-transpose",), "x.reshape(B, H, T, d_k)", x.reshape(B, H, T, d_k))]
    for order in itertools.permutations(range(4)):
        right_order = order == (0, 2, 1, 3)
        if not right_order:
            layouts.append((("split-heads-wrong-axes",), f"transpose{order}", blocks.transpose(order)))
        layouts.append(((("split-heads-interleaved",) if right_order else
                         ("split-heads-interleaved", "split-heads-wrong-axes")),
                        f"x.reshape(B, T, d_k, H), axes {order}", dealt.transpose(order)))
    for misconceptions, label, layout in layouts:
        if layout.shape == got.shape and not same_value(layout, expected) and same_value(got, layout):
            return [Finding(misconception, case.function, message_data("sig_layout", {
                "what": case.call_text or case.function, "layout": label})) for misconception in misconceptions]
    return []


def features_layout(case: Case, got) -> list[Finding]:
    """combine_heads' output as the heads' features in another layout: no transpose, heads reordered or dealt."""
    x = np.asarray(case.args[0])
    expected = case.expected
    if not _array(got, expected.shape) or x.ndim != 4:
        return []
    B, H, T, d_k = x.shape
    width = H * d_k
    layouts = [("combine-heads-no-transpose", "x.reshape(B, T, D)", x.reshape(B, T, width))]
    for heads in itertools.permutations(range(H)):
        reordered = x[:, list(heads)]
        if list(heads) != list(range(H)):
            layouts.append(("combine-heads-wrong-order", f"heads in the order {heads}",
                            np.swapaxes(reordered, 1, 2).reshape(B, T, width)))
        layouts.append(("combine-heads-wrong-order", f"heads in the order {heads}, features dealt round-robin",
                        reordered.transpose(0, 2, 3, 1).reshape(B, T, width)))
    for misconception, label, layout in layouts:
        if not same_value(layout, expected) and same_value(got, layout):
            return [Finding(misconception, case.function, message_data("sig_layout", {
                "what": case.call_text or case.function, "layout": label}))]
    return []


# ---- forward ----------------------------------------------------------------------------------------
def _through_heads(weights: np.ndarray, values: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Each head's weights times its values, through that head's rows of ``matrix``, summed over heads."""
    H, d_k = values.shape[1], values.shape[3]
    return np.einsum("bhts,bhsd,hde->bte", weights.astype(np.float64), values, matrix.reshape(H, d_k, -1))


def multihead(case: Case, got) -> list[Finding]:
    """forward with its weights: the weights' signature on the projected heads, then the rest of the
    layer applied to the student's own weights, with or without W_O."""
    evidence = case.evidence or {}
    expected = case.expected
    if not (isinstance(expected, tuple) and isinstance(got, tuple) and len(got) == 2 and "value_heads" in evidence):
        return []
    out, weights = got
    if not (_array(weights, expected[1].shape) and _array(out, expected[0].shape)):
        return []
    queries, keys, values = (evidence[name] for name in ("query_heads", "key_heads", "value_heads"))
    findings: list[Finding] = []
    if not same_value(weights, expected[1]):
        found = weights_findings(queries, keys, weights, function="scaled_dot_product_attention",
                                 sizes=_attention_sizes(queries, keys))
        if found is None:
            found = _projections_of_weights(evidence, weights)
        findings += found or []
    if not same_value(out, expected[0]) and np.isfinite(weights).all():
        W_O = case.weights["W_O"]
        if not same_value(out, _through_heads(weights, values, W_O)):
            tail = _tail(evidence, weights, out, W_O)
            if tail is None:
                return findings
            findings.append(tail)
    return findings


def _tail(evidence: dict, weights: np.ndarray, out: np.ndarray, W_O: np.ndarray) -> Finding | None:
    """The step after the weights that explains ``out``: no W_O, W_O.T, or values projected wrongly."""
    width = W_O.shape[0]
    options = [("mha-no-output-projection", "sig_no_output_projection", {}, evidence["value_heads"], np.eye(width)),
               ("mha-wrong-projection", "sig_projected_with", {"projection": "out @ W_O.T"},
                evidence["value_heads"], W_O.T)]
    for label, heads in (evidence.get("projections") or {}).items():
        if label.startswith("V @"):
            options.append(("mha-wrong-projection", "sig_projected_with", {"projection": label}, heads, W_O))
    for misconception, key, params, heads, matrix in options:
        if same_value(out, _through_heads(weights, heads, matrix)):
            return Finding(misconception, "forward", message_data(key, params))
    return None


def _projections_of_weights(evidence: dict, weights: np.ndarray) -> list[Finding] | None:
    """Weights that are right attention of queries or keys projected with another matrix."""
    projections = evidence.get("projections") or {}
    queries = {"Q @ W_Q": evidence["query_heads"]} | {k: v for k, v in projections.items() if k.startswith("Q @")}
    keys = {"K @ W_K": evidence["key_heads"]} | {k: v for k, v in projections.items() if k.startswith("K @")}
    values = weights.astype(np.float64)
    if not np.isfinite(values).all() or (values <= 0).any() or not _sums_to_one(values, values.ndim - 1):
        return None
    logs = np.log(values)
    for (query_label, query), (key_label, key) in itertools.product(queries.items(), keys.items()):
        if query_label == "Q @ W_Q" and key_label == "K @ W_K":
            continue
        fitted = _fit(logs, query @ np.swapaxes(key, -1, -2), (values.ndim - 1,))
        right = 1.0 / np.sqrt(query.shape[-1])
        if fitted is not None and fitted[1] < FIT_TOLERANCE and abs(fitted[0] - right) <= 1e-3 * right:
            wrong = [label for label, default in ((query_label, "Q @ W_Q"), (key_label, "K @ W_K")) if label != default]
            return [Finding("mha-wrong-projection", "forward",
                            message_data("sig_projected_with", {"projection": ", ".join(wrong)}))]
    return None


def overflow_kind(x: np.ndarray, got: np.ndarray, ids: tuple[str, str]) -> str:
    """Tell an unstable softmax from a global-max one by which rows broke.

    ``ids`` names the two mistakes (no shift, one global shift) for this case.

    Used when no twin matches exactly (float32 arithmetic over- and underflows
    at other thresholds than the float64 twins). With one global shift the row
    holding the largest logit is fine and every row far below it underflows
    to 0/0; without a shift, or with a shift by the row mean, some row
    overflows while the rows far below the top stay finite or break anyway.
    """
    rows_in, rows_out = x.reshape(-1, x.shape[-1]), got.reshape(-1, x.shape[-1])
    finite_max = np.where(np.isfinite(rows_in), rows_in, -np.inf).max(axis=-1)
    if not np.isfinite(finite_max).any() or np.abs(finite_max[np.isfinite(finite_max)]).max() <= 80:
        return "numeric-mismatch"
    broken = ~np.isfinite(rows_out).all(axis=-1)
    top = finite_max.max()
    certain = finite_max < top - 750  # exp underflows to 0 here in float64 and float32 alike
    possible = finite_max < top - 87  # ... and here in float32
    if not broken[int(np.argmax(finite_max))] and certain.any() and broken[certain].all() \
            and not (broken & ~possible).any():
        return ids[1]
    return ids[0]


RULES = {
    "normalizer": softmax_normalizer,
    "attention": attention,
    "heads-layout": heads_layout,
    "features-layout": features_layout,
    "multihead": multihead,
}
