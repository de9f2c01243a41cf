"""The core exercise's signature rules: a catalogued mistake recognized by what it does to the values.

The twins (``cases.py``) recognize a mistake written the way we wrote it.
These rules look at the student's own output and ask what it is (see
``grader.grading.findings`` for how the engine asks for them):

- softmax: does it sum to 1 over some axes other than the last (the
  normalizer is taken over the wrong axes, however it was written)?
- attention weights: log-weights are scores up to a constant per normalized
  slice, so fit them as ``alpha * Q @ K' + c``, ``K'`` being K's entries in
  any arrangement a reshape or transpose gives. The arrangement tells a
  transpose mistake, ``alpha`` a scale mistake, the slices ``c`` is constant
  on (and what sums to 1) an axis mistake; weights that are no softmax but the
  scores themselves are returned scores.
- attention output: right or explained weights, but an output that is not
  those weights times V, is a value-product mistake; one that is those
  weights times V divided by sqrt(d_k) had its scale applied after the
  softmax.
- split/combine: the output is x's entries in another layout (no
  transpose, dealt round-robin, axes in another order, heads reordered).
- forward, when it returns its weights: the weights are analysed like
  attention's (on the reference's projected heads, shipped as the case's
  ``evidence``), and the output is compared with what the student's *own*
  weights give through the rest of the layer, with or without ``W_O``. Two
  mistakes along the path are then each shown by their own evidence.
- forward's output as the layer's own (or a twin's) plus the query input,
  layer-normalized over the model width, or both: the Transformer block's
  residual or layer norm done inside the layer.

Every rule returns findings only for what the values show; nothing here
affects a score. The rules do plain algebra on arrays and need no reference
code, so they run in a student release too.
"""

from __future__ import annotations

import itertools

import numpy as np

from grader.assignments.multihead_attention.fitting import (FIT_TOLERANCE, attention_sizes, axes_code, axis_sets,
                                                            divisor_text, exponential_rows, fit_logs, is_array,
                                                            returned_scores, right_in_every_respect, sums_to_one,
                                                            uniform_rows, weights_findings)
from grader.grading.case import Case, same_value
from grader.grading.findings import AloneRule, CompanionRule, Finding, message_data


# ---- softmax ----------------------------------------------------------------------------------
def softmax_normalizer(case: Case, got) -> list[Finding]:
    """Rows that do not sum to 1 while the values sum to 1 over other axes: the wrong normalizer."""
    expected = case.expected
    if not is_array(got, expected.shape) or got.ndim < 2:
        return []
    values = got.astype(np.float64)
    if not np.isfinite(values).all() or (values < 0).any():
        return []
    last = values.ndim - 1
    if sums_to_one(values, last):
        return _shift_over_other_axes(case, values)
    vanished = (values == 0).all(axis=-1) & np.isfinite(np.asarray(case.args[0], dtype=np.float64)).any(axis=-1)
    if vanished.any():
        return []  # a row of finite logits with no weight at all broke (0/0 patched to 0): no normalizer is wrong
    for axes in axis_sets(values.ndim):
        if axes != (last,) and sums_to_one(values, axes):
            return [Finding("softmax-wrong-axis", case.function,
                            message_data("sig_normalized_over", {"what": case.call_text or case.function,
                                                            "axes": axes_code(axes, values.ndim)}))]
    return []


def _shift_over_other_axes(case: Case, values: np.ndarray) -> list[Finding]:
    """Rows that sum to 1 but are shifted by a maximum taken over other axes: the shift then differs along a
    row (a column's maximum, say), so the row's ratios change."""
    x = np.asarray(case.args[0], dtype=np.float64)
    if not np.isfinite(x).all() or x.shape != values.shape:
        return []
    last = x.ndim - 1
    for axes in axis_sets(x.ndim):
        if last in axes:
            continue  # a shift constant along each row leaves the softmax right
        with np.errstate(all="ignore"):  # large logits over- or underflow here: such a candidate just fails
            powers = np.exp(x - x.max(axis=axes, keepdims=True))
            shifted = powers / powers.sum(axis=-1, keepdims=True)
        if not same_value(shifted, case.expected) and same_value(values, shifted):
            return [Finding("softmax-wrong-axis", case.function, message_data("sig_shifted_over", {
                "what": case.call_text or case.function, "axes": axes_code(axes, x.ndim)}))]
    return []


def _output_findings(Q, K, V, weights, out, *, weights_right: bool, function: str) -> list[Finding]:
    """A wrong output next to right or explained weights: is it those weights times V?"""
    if weights_right and not is_array(out):
        return []
    if is_array(out) and same_value(out, weights.astype(np.float64) @ V):
        return []  # the output follows the weights: whatever is wrong is in the weights
    if is_array(out) and same_value(out, weights.astype(np.float64) @ V / np.sqrt(Q.shape[-1])):
        # the weights times V, divided by sqrt(d_k) afterwards: the scale came after the softmax
        return [Finding("attention-scale-after-softmax", function, message_data("sig_output_rescaled", {
            "right": f"{np.sqrt(Q.shape[-1]):.4g}"}))]
    returned = returned_scores(Q, K, weights)
    if returned is not None and is_array(out):
        _, alpha, raw = returned  # the weights are the scores: the output shows how the student scaled them
        right = 1.0 / np.sqrt(Q.shape[-1])
        for factor, finding in ((right, None), (1.0, Finding("attention-no-scale", function,
                                                             message_data("sig_output_unscaled", {}))),
                                (alpha, Finding("attention-wrong-scale", function, message_data("sig_scores_scaled", {
                                    "divisor": divisor_text(alpha, attention_sizes(Q, K)),
                                    "right": f"{np.sqrt(Q.shape[-1]):.4g}"})))):
            if same_value(out, exponential_rows(factor * raw) @ V):
                return [finding] if finding is not None else []
        # no scaling of them gives the output: the exponentials the student's softmax takes of them may be
        # wrong (a global shift underflows rows of large scores), which its own checks name; "out is not your
        # own weights @ V" says nothing where the weights returned are not weights
        return []
    key = "sig_output_not_weights_times_values" if weights_right else "sig_output_not_own_weights_times_values"
    return [Finding("attention-wrong-value-product", function, message_data(key, {}))]


def attention(case: Case, got) -> list[Finding]:
    """(out, weights) of scaled dot-product attention: the weights' signature, then the output's."""
    Q, K, V = (np.asarray(item, dtype=np.float64) for item in case.args[:3])
    expected_out, expected_weights = case.expected
    if not (isinstance(got, tuple) and len(got) == 2 and is_array(got[1], expected_weights.shape)):
        return []
    out, weights = got
    findings: list[Finding] = []
    weights_right = same_value(weights, expected_weights)
    if not weights_right:
        found = weights_findings(Q, K, weights, function=case.function, sizes=attention_sizes(Q, K))
        if found is None:
            return []
        findings += found
    if not same_value(out, expected_out):
        tail = _output_findings(Q, K, V, weights, out, weights_right=weights_right, function=case.function)
        if any(finding.misconception == "attention-scale-after-softmax" for finding in tail):
            # unscaled weights and a scaled output are one mistake: the scale moved past the softmax
            findings = [finding for finding in findings if finding.misconception != "attention-no-scale"]
        findings += tail
    return findings


# ---- split_heads / combine_heads ----------------------------------------------------------------
def heads_layout(case: Case, got) -> list[Finding]:
    """split_heads' output as x's entries in another layout: no transpose, dealt round-robin, wrong axes."""
    if not case.args:
        return []  # several calls on one layer (case.calls): their values are no single layout of one input
    x = np.asarray(case.args[0])
    expected = case.expected
    if not is_array(got) or got.size != x.size or x.ndim != 3:
        return []
    B, T, D = x.shape
    H, d_k = expected.shape[1], expected.shape[3]
    fixed = _fixed_head_count(case, x, got, H)
    if fixed:
        # x cut right into a constant number of heads: the plainest reading, though with H and d_k exchanged
        # the same entries are also x dealt round-robin
        return fixed
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


def _fixed_head_count(case: Case, x: np.ndarray, got: np.ndarray, H: int) -> list[Finding]:
    """x cut right into another number of heads (a constant, not num_heads): every other divisor of D tried."""
    B, T, D = x.shape
    for heads in range(1, D + 1):
        if D % heads or heads == H or got.shape != (B, heads, T, D // heads):
            continue
        if same_value(got, x.reshape(B, T, heads, D // heads).transpose(0, 2, 1, 3)):  # (B, heads, T, D/heads)
            return [Finding("split-heads-hardcoded-shape", case.function, message_data("sig_head_count", {
                "what": case.call_text or case.function, "got": heads, "width": D // heads, "heads": H,
                "d_k": D // H}))]
    return []


def features_layout(case: Case, got) -> list[Finding]:
    """combine_heads' output as the heads' features in another layout: no transpose, heads reordered or dealt."""
    x = np.asarray(case.args[0])
    expected = case.expected
    if not is_array(got, expected.shape) or x.ndim != 4:
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
    if not is_array(out, expected[0].shape):
        return []
    from_query = _from_query_input(evidence, weights, expected[1])
    if from_query is not None:
        return from_query
    if not is_array(weights, expected[1].shape):
        return []
    queries, keys, values = (evidence[name] for name in ("query_heads", "key_heads", "value_heads"))
    findings: list[Finding] = []
    if not same_value(weights, expected[1]):
        found = weights_findings(queries, keys, weights, function="scaled_dot_product_attention",
                                 sizes=attention_sizes(queries, keys))
        if found is None:
            found = _projections_of_weights(evidence, weights)
        if found is None:
            found = _split_in_forward(evidence, weights)
        findings += found or []
    if not same_value(out, expected[0]) and np.isfinite(weights).all():
        W_O = case.weights["W_O"]
        if not same_value(out, _through_heads(weights, values, W_O)):
            tail = _tail(evidence, weights, out, W_O)
            if tail is None:
                return findings
            findings.append(tail)
    return findings


def _head_layouts(heads: np.ndarray) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """The reference's (B, H, L, d_k) heads of one input cut the ways a split goes wrong: features dealt
    round-robin, or a reshape straight to (B, H, L, d_k); each with its mistake, by its layout."""
    B, H, L, d_k = heads.shape
    merged = heads.transpose(0, 2, 1, 3).reshape(B, L, H * d_k)  # (B, L, D): the projected input again
    return {"x.reshape(B, L, d_k, H), axes (0, 3, 1, 2)": (("split-heads-interleaved",),
                                                          merged.reshape(B, L, d_k, H).transpose(0, 3, 1, 2)),
            "x.reshape(B, H, L, d_k)": (("split-heads-no-transpose",), merged.reshape(B, H, L, d_k))}


def _split_in_forward(evidence: dict, weights: np.ndarray) -> list[Finding] | None:
    """Weights that are right attention of queries or keys cut into heads another way: forward splits them
    itself (or split_heads does), wrongly. Only weights right in every other respect count."""
    queries, keys = evidence["query_heads"], evidence["key_heads"]
    query_options = [((), queries, "")] + [(ids, layout, f"Q @ W_Q cut as {label}")
                                           for label, (ids, layout) in _head_layouts(queries).items()]
    key_options = [((), keys, "")] + [(ids, layout, f"K @ W_K cut as {label}")
                                      for label, (ids, layout) in _head_layouts(keys).items()]
    for (query_ids, query, query_label), (key_ids, key, key_label) in itertools.product(query_options, key_options):
        if not query_ids and not key_ids:
            continue
        if not right_in_every_respect(query, key, weights):
            continue  # not explained, or explained only with a mistake of the weights besides
        layout = ", ".join(label for label in (query_label, key_label) if label)
        return [Finding(misconception, "forward", message_data("sig_heads_cut_in_forward", {"layout": layout}))
                for misconception in dict.fromkeys(query_ids + key_ids)]
    return None


def _from_query_input(evidence: dict, weights, expected_weights: np.ndarray) -> list[Finding] | None:
    """Wrong weights that are attention over keys projected from the query input (Q @ W_K), with or without a
    mistake of their own: forward ignored K and V, named beside what the weights show besides. None when the
    keys from Q are not what the weights show (or are the real keys: self-attention)."""
    keys = (evidence.get("projections") or {}).get("Q @ W_K")
    queries = evidence["query_heads"]
    if keys is None or keys.shape == evidence["key_heads"].shape and same_value(keys, evidence["key_heads"]):
        return None
    if not is_array(weights, queries.shape[:-1] + (keys.shape[-2],)) or (
            weights.shape == expected_weights.shape and same_value(weights, expected_weights)):
        return None
    if uniform_rows(weights.astype(np.float64)):
        return None  # uniform weights show nothing about which keys they were computed from
    if weights.shape == expected_weights.shape and weights_findings(
            queries, evidence["key_heads"], weights, function="scaled_dot_product_attention",
            sizes=attention_sizes(queries, evidence["key_heads"])) is not None:
        return None  # the real keys explain them: the mistake is in the weights, not in where the keys came from
    found = weights_findings(queries, keys, weights, function="scaled_dot_product_attention",
                             sizes=attention_sizes(queries, keys))
    if found is None:
        return None
    return [Finding("mha-ignores-key-value", "forward", message_data("sig_keys_from_query", {}))] + found


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
    if not np.isfinite(values).all() or (values <= 0).any() or not sums_to_one(values, values.ndim - 1):
        return None
    logs = np.log(values)
    for (query_label, query), (key_label, key) in itertools.product(queries.items(), keys.items()):
        if query_label == "Q @ W_Q" and key_label == "K @ W_K":
            continue
        fitted = fit_logs(logs, query @ np.swapaxes(key, -1, -2), (values.ndim - 1,))
        right = 1.0 / np.sqrt(query.shape[-1])
        if fitted is not None and fitted[1] < FIT_TOLERANCE and abs(fitted[0] - right) <= 1e-3 * right:
            wrong = [label for label, default in ((query_label, "Q @ W_Q"), (key_label, "K @ W_K")) if label != default]
            return [Finding("mha-wrong-projection", "forward",
                            message_data("sig_projected_with", {"projection": ", ".join(wrong)}))]
    return None


# ---- the Transformer block's own steps, done inside the layer -------------------------------------------
def block_steps(case: Case, got) -> list[Finding]:
    """An output that is the layer's (or a catalogued mistake's) plus the query input, layer-normalised over
    the model width, or both: the block's residual or layer norm done inside the layer.

    The layer's own output is the expected value or the value of one of the case's twins (each with its
    mistake, named beside the block's step), so a residual on top of another mistake is named for both.
    """
    expected = case.expected
    out = got[0] if isinstance(expected, tuple) and isinstance(got, tuple) and got else got
    expected_out = expected[0] if isinstance(expected, tuple) else expected
    if not is_array(expected_out) or not is_array(out, expected_out.shape) or not np.isfinite(out).all():
        return []
    query = np.asarray(case.args[0], dtype=np.float64)
    if query.shape != expected_out.shape:
        return []
    inner = [(None, expected_out)] + [
        (misconception, value[0] if isinstance(value, tuple) else value) for misconception, _, value in case.known_twins()
        if is_array(value[0] if isinstance(value, tuple) and value else value, expected_out.shape)]
    values = out.astype(np.float64)
    # rows of mean zero, the first thing a layer norm leaves: without them no step below is a layer norm
    normalized = _centred_rows(values)
    W_O = (case.weights or {}).get("W_O")
    # the residual added to the combined heads, before W_O: (heads + Q) @ W_O = layer + Q @ W_O
    projected = query @ np.asarray(W_O, dtype=np.float64) if W_O is not None and query.shape[-1] == len(W_O) else None
    for misconception, layer in inner:
        layer = layer.astype(np.float64)
        if not np.isfinite(layer).all():
            continue
        before = projected is not None and same_value(values, layer + projected)
        residual_added = same_value(values, layer + query) or before
        layer_normed = normalized and _normalized_rows(values, layer)
        # rows divided by their own RMS or length are not centred: the screen above does not apply to them
        rescaled = not residual_added and not layer_normed and _rescaled_rows(values, layer)
        steps = (("mha-adds-residual",) if residual_added else
                 ("mha-adds-layer-norm",) if rescaled or layer_normed else
                 ("mha-adds-residual", "mha-adds-layer-norm") if normalized and _normalized_rows(values, layer + query)
                 else ())
        if steps:
            residual = "sig_residual_before_output_projection" if before else "sig_residual_added"
            norm = "sig_rms_norm_applied" if rescaled else "sig_layer_norm_applied"
            findings = [Finding(step, case.function, message_data(
                residual if step == "mha-adds-residual" else norm,
                {"what": case.call_text or case.function})) for step in steps]
            if misconception is not None:
                findings.append(Finding(misconception, _home(misconception, case.function), message_data(
                    "sig_block_step_on_mistake", {"what": case.call_text or case.function})))
            return findings
    return []


def _centred_rows(values: np.ndarray) -> bool:
    """Every row of ``values`` (its last axis) has mean 0, relative to its largest entry."""
    scale = max(float(np.abs(values).max(initial=0.0)), 1e-12)
    return not np.abs(values.mean(axis=-1)).max(initial=0.0) > 1e-4 * scale


def _normalized_rows(values: np.ndarray, layer: np.ndarray) -> bool:
    """``values`` is ``layer`` normalized over its last axis (mean 0, variance 1 up to a small epsilon)."""
    centred = layer - layer.mean(axis=-1, keepdims=True)
    spread = np.sqrt((centred ** 2).mean(axis=-1, keepdims=True))
    if (spread <= 1e-12).any() or not _centred_rows(values):
        return False
    factor = (values * centred).sum(axis=-1, keepdims=True) / (centred ** 2).sum(axis=-1, keepdims=True)
    fitted = factor * centred
    residual = float(np.linalg.norm(values - fitted)) / max(float(np.linalg.norm(values)), 1e-300)
    # the factor is 1/sqrt(variance + eps) or 1/(std + eps): within a few percent of 1/std whatever the eps
    return residual < FIT_TOLERANCE and bool(np.all(np.abs(factor * spread - 1.0) < 0.05))


def _rescaled_rows(values: np.ndarray, layer: np.ndarray) -> bool:
    """``values`` is ``layer`` with each row divided by its root mean square or its length over the last axis,
    not centred (an RMS norm or an L2 normalisation, up to a small epsilon)."""
    size = (layer ** 2).sum(axis=-1, keepdims=True)
    if (size <= 1e-24).any():
        return False
    factor = (values * layer).sum(axis=-1, keepdims=True) / size  # each row's own factor
    residual = float(np.linalg.norm(values - factor * layer)) / max(float(np.linalg.norm(values)), 1e-300)
    if residual >= FIT_TOLERANCE:
        return False
    rms, length = np.sqrt(size / layer.shape[-1]), np.sqrt(size)
    return any(bool(np.all(np.abs(factor * norm - 1.0) < 0.05)) for norm in (rms, length))


def _home(misconception: str, function: str) -> str:
    """The function a catalogued mistake belongs to (its catalog entry's), else ``function``."""
    from grader.content.catalog import load_catalog

    entry = load_catalog().get(misconception)
    return entry.function if entry is not None and entry.function not in (None, "__init__") else function


RULES = {
    "normalizer": softmax_normalizer,
    "attention": attention,
    "heads-layout": heads_layout,
    "features-layout": features_layout,
    "multihead": multihead,
    "block-steps": block_steps,
}

def query_length(case: Case, companion: Case) -> tuple:
    """Right with S = T on the companion, wrong with the case's own S: the message naming both lengths."""
    return message_data("sig_query_length", {"what": case.call_text or f"{case.function}(...)",
                                             "T": companion.args[0].shape[-2], "S": case.args[1].shape[-2]})


# Right with as many keys as queries (S = T), wrong here: the keys' length comes from Q.
COMPANION = CompanionRule(
    misconception="mha-kv-uses-query-length",
    evidence=query_length,
    length_like=frozenset({"attention-wrong-value-product", "attention-wrong-transpose",
                           "attention-softmax-wrong-axis", "mha-wrong-weights-returned", "mha-ignores-key-value"}),
    upstream={"forward": "scaled_dot_product_attention"},
    # a product whose operands do not line up, as matmul, einsum or broadcasting word it (a reshape's own
    # error is another kind: the keys cut with the query's length)
    alike_errors=("matmul", "einstein", "subscripts", "operand", "broadcast", "aligned"),
    # a split_heads that keeps the first array's sizes cuts the keys with the queries' length too: when its own
    # checks find that, it is the one mistake
    stand_ins={"forward": (("split-heads-hardcoded-shape", "split_heads"),)},
)


# Attention judged with a right softmax; forward with right attention and head layout.
ALONE = AloneRule(callees={
    "scaled_dot_product_attention": (("softmax", "function"),),
    "forward": (("scaled_dot_product_attention", "function"), ("split_heads", "method"), ("combine_heads", "method")),
})
