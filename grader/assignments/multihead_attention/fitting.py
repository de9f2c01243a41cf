"""The algebra of the core exercise's signature rules: attention weights fitted as a softmax of scores.

Log-weights are scores up to a constant on each normalized slice, so a
student's weights are fitted as ``alpha * Q @ K' + c``: ``K'`` runs over every
arrangement of K's entries that one reshape and one transpose give, ``c`` is
constant along the normalized axes (any set of them), ``alpha`` is a least
squares fit. What fits tells the mistake: the arrangement, the scale, the
normalized axes, or weights that are the scores themselves (see
``signatures.py`` beside it for the rules that use it).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from grader.grading.findings import Finding, message_data

FIT_TOLERANCE = 1e-4  # relative residual of a fit: float32 weights fit to about 1e-7
SUM_TOLERANCE = 1e-4


def is_array(value, shape=None) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and (shape is None or value.shape == shape)


def uniform_rows(values: np.ndarray) -> bool:
    """Every row (last axis) is 1/N throughout: weights that say nothing about the scores or the keys."""
    return bool(np.allclose(values, 1.0 / values.shape[-1], rtol=1e-9, atol=0.0))


def axis_sets(ndim: int, first: tuple = ()) -> list[tuple[int, ...]]:
    """Every non-empty set of axes, ``first`` ones first, then by size."""
    every = [axes for size in range(1, ndim + 1) for axes in itertools.combinations(range(ndim), size)]
    return [axes for axes in first if axes in every] + [axes for axes in every if axes not in first]


def sums_to_one(values: np.ndarray, axes) -> bool:
    return bool(np.allclose(values.sum(axis=axes), 1.0, rtol=0.0, atol=SUM_TOLERANCE))


def axes_code(axes: tuple[int, ...], ndim: int, letters: tuple[str, ...] | None = None) -> str:
    """``(2,)`` -> ``axis=2 (T)``; every axis -> ``axis=None``: the way NumPy code names them."""
    if len(axes) == ndim and ndim > 1:
        return "axis=None"
    named = f" ({', '.join(letters[axis] for axis in axes)})" if letters else ""
    return (f"axis={axes[0]}" if len(axes) == 1 else f"axis={axes}") + named


def fit_logs(logs: np.ndarray, raw: np.ndarray, axes) -> tuple[float, float] | None:
    """``(alpha, residual)`` of ``logs ~ alpha * raw + c`` with ``c`` constant along ``axes``, or None."""
    centred_logs = logs - logs.mean(axis=axes, keepdims=True)
    centred_raw = raw - raw.mean(axis=axes, keepdims=True)
    spread, raw_spread = float(np.linalg.norm(centred_logs)), float(np.linalg.norm(centred_raw))
    if spread < 1e-9 or raw_spread < 1e-9 * max(float(np.linalg.norm(raw)), 1e-300):
        return None  # nothing varies: uniform weights, or scores constant where the weights are normalized
    alpha = float((centred_logs * centred_raw).sum()) / raw_spread ** 2
    return alpha, float(np.linalg.norm(centred_logs - alpha * centred_raw)) / spread


def exponential_rows(z: np.ndarray) -> np.ndarray:
    """A softmax over the last axis, for what-if outputs (never compared with a student's softmax)."""
    peak = np.max(z, axis=-1, keepdims=True)
    powers = np.exp(z - peak)
    return powers / powers.sum(axis=-1, keepdims=True)


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


@dataclass(frozen=True)
class Arranged:
    """``Q @ keys`` for every arrangement of K's entries (``key_arrangements``), in their order."""

    labels: tuple[str, ...]
    raws: tuple[np.ndarray, ...]  # each (B, H, T, S), as ``Q.astype(np.float64) @ keys`` computes it
    stacked: np.ndarray  # (arrangements, B, H, T, S)
    squares: np.ndarray  # (arrangements,): the sum of each one's squared entries


_ARRANGED: dict = {}  # (id(Q), id(K)) -> (Q, K, Arranged): the last pairs arranged, the arrays kept alive
_ARRANGED_KEPT = 4  # a case's rules fit one or two pairs; each pair keeps about 70 score arrays


def arranged_scores(Q: np.ndarray, K: np.ndarray) -> Arranged:
    """``Q @ keys`` for every arrangement of K, made once for the same two arrays: a case's rules fit the same
    queries and keys several times (the weights, then the scores, then the output's own weights)."""
    kept = _ARRANGED.get((id(Q), id(K)))
    if kept is not None and kept[0] is Q and kept[1] is K:
        return kept[2]
    pairs = [(label, Q.astype(np.float64) @ keys) for label, keys in key_arrangements(K.astype(np.float64))]
    stacked = np.stack([raw for _, raw in pairs])
    flat = stacked.reshape(len(stacked), -1)
    # each arrangement's scores as a view of the stack (the same numbers, kept once)
    arranged = Arranged(tuple(label for label, _ in pairs), tuple(stacked), stacked, np.einsum("ij,ij->i", flat, flat))
    while _ARRANGED and len(_ARRANGED) >= _ARRANGED_KEPT:
        del _ARRANGED[next(iter(_ARRANGED))]
    if _ARRANGED_KEPT:
        _ARRANGED[id(Q), id(K)] = (Q, K, arranged)
    return arranged


def fit_weights(Q: np.ndarray, K: np.ndarray, weights) -> ScoresFit | None:
    """The arrangement of K, the scale and the normalized axes that give ``weights``, or None."""
    if not is_array(weights, Q.shape[:-1] + (K.shape[-2],)):
        return None
    values = weights.astype(np.float64)
    if not np.isfinite(values).all() or (values <= 0).any():
        return None
    logs = np.log(values)
    arranged = arranged_scores(Q, K)
    raws, stacked = list(zip(arranged.labels, arranged.raws)), arranged.stacked  # stacked: (arrangements, B, H, T, S)
    last = values.ndim - 1
    for axes in axis_sets(values.ndim, first=((last,), (last - 1,), (last - 1, last))):
        # every arrangement's fit at once, to find the few that may fit; each of those is then fitted on its
        # own (fit_logs), in order, so what is found (and its alpha) is exactly what fitting one by one finds
        for index in _candidates(logs, stacked, axes, squares=arranged.squares):
            label, raw = raws[index]
            fitted = fit_logs(logs, raw, axes)
            if fitted is not None and fitted[1] < FIT_TOLERANCE and fitted[0] > 0:
                return ScoresFit(label, raw, fitted[0], axes)
    return None


def _candidates(logs: np.ndarray, stacked: np.ndarray, axes: tuple[int, ...], *,
                squares: np.ndarray | None = None) -> list[int]:
    """The arrangements (indices into ``stacked``) whose fit over ``axes`` is within ten times the tolerance,
    in order: the vectorized ``fit_logs``, whose rounding differs from it by far less than that margin.

    For the log-weights ``l`` centred on each slice of ``axes`` and the scores ``r`` (``c`` centred so), the
    least-squares residual is ``sqrt(1 - <c, l>^2 / (|c|^2 |l|^2))``, where ``<c, l> = <r, l>`` (``l`` sums to
    0 on each slice, where the slice means of ``r`` are constant) and ``|c|^2 = |r|^2 - n |slice means|^2``:
    two passes over the arrangements per set of axes where the fit itself makes six. Scores nearly constant
    on the slices, whose ``|c|^2`` that difference cannot resolve, are always left to ``fit_logs``.
    ``squares``: each arrangement's ``|r|^2``, when known."""
    centred_logs = logs - logs.mean(axis=axes, keepdims=True)
    spread = float(np.linalg.norm(centred_logs))
    if spread < 1e-9:
        return []  # fit_logs gives None for every arrangement
    count = len(stacked)
    flat = stacked.reshape(count, -1)
    if squares is None:
        squares = np.einsum("ij,ij->i", flat, flat)
    means = stacked.mean(axis=tuple(axis + 1 for axis in axes)).reshape(count, -1)  # (arrangements, slices)
    with np.errstate(all="ignore"):
        raw_spread_squared = squares - (flat.shape[1] // means.shape[1]) * np.einsum("ij,ij->i", means, means)
        product = flat @ centred_logs.reshape(-1)
        alpha = product / raw_spread_squared
        unexplained = 1.0 - product * alpha / spread ** 2  # the squared relative residual
        residual = np.sqrt(np.maximum(unexplained, 0.0))
        unresolved = ~(raw_spread_squared > 1e-6 * squares)
    near = np.isfinite(residual) & (residual < 10 * FIT_TOLERANCE) & ~(alpha <= 0)
    return [int(index) for index in np.flatnonzero(near | unresolved)]


def returned_scores(Q: np.ndarray, K: np.ndarray, weights) -> tuple[str, float, np.ndarray] | None:
    """``(arrangement, alpha, raw)`` when ``weights`` are ``alpha * Q @ keys`` themselves, no softmax."""
    if not is_array(weights, Q.shape[:-1] + (K.shape[-2],)) or not np.isfinite(weights).all():
        return None
    values = weights.astype(np.float64)
    arranged = arranged_scores(Q, K)
    for index in _scaled_candidates(values, arranged.stacked):
        label, raw = arranged.labels[index], arranged.raws[index]
        size = float((raw * raw).sum())
        if size < 1e-300:
            continue
        alpha = float((values * raw).sum()) / size
        if np.linalg.norm(values - alpha * raw) < FIT_TOLERANCE * max(float(np.linalg.norm(values)), 1e-300):
            return label, alpha, raw
    return None


def _scaled_candidates(values: np.ndarray, stacked: np.ndarray) -> list[int]:
    """The arrangements (indices into ``stacked``) of which ``values`` may be a multiple, within ten times the
    tolerance, in order: ``returned_scores``'s own test for all at once, each then tested alone."""
    count = len(stacked)
    flat, target = stacked.reshape(count, -1), values.reshape(-1)
    with np.errstate(all="ignore"):
        sizes = np.einsum("ij,ij->i", flat, flat)
        alpha = (flat @ target) / sizes
        residual = np.sqrt(((target - alpha[:, None] * flat) ** 2).sum(axis=1))
    bound = 10 * FIT_TOLERANCE * max(float(np.linalg.norm(values)), 1e-300)
    near = ~(sizes < 1e-300) & ~(residual >= bound)  # a NaN is kept: the test alone decides it
    return [int(index) for index in np.flatnonzero(near)]


def divisor_text(alpha: float, sizes: dict[str, int]) -> str:
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
            return _unevenly_scaled(Q, K, weights, function=function)
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
    rescaled, over = None, None
    if fit.axes == (last,):
        # the simplest explanation first: rows that all sum to one constant were scaled after the softmax;
        # a wider normalized axis set only when they do not (a constant like 1/2 summed over a batch of 2
        # makes 1 by the coincidence of the sizes, not by a normalization)
        sums = values.sum(axis=last)
        if not np.allclose(sums, 1.0, rtol=0.0, atol=SUM_TOLERANCE):
            if np.allclose(sums, sums.flat[0], rtol=SUM_TOLERANCE, atol=0.0):
                rescaled = float(sums.flat[0])
            else:
                over = _normalized_over(values, logs=np.log(values), raw=fit.raw, wider_than=last)
                if over is None:
                    return findings or None
    elif sums_to_one(values, fit.axes):
        over = fit.axes
    else:
        # slices of the fitted axes that all sum to one constant were scaled after a softmax over them, unless
        # one normalization over more axes (a real one: the log-weights fit there too) explains them alone
        # (identical keys make a softmax over T and S look like one over T divided by S): then no scale is named
        sums = values.sum(axis=fit.axes)
        if not np.allclose(sums, sums.flat[0], rtol=SUM_TOLERANCE, atol=0.0) or _normalized_over(
                values, logs=np.log(values), raw=fit.raw, wider_than=fit.axes) is not None:
            return findings or None
        rescaled, over = float(sums.flat[0]), fit.axes
    if rescaled is not None:
        key, params = ("sig_weights_rescaled", {}) if over is None else (
            "sig_weights_rescaled_over", {"axes": axes_code(over, values.ndim, axis_letters)})
        findings.append(Finding("attention-scale-after-softmax", function, message_data(key, {
            "total": f"{rescaled:.4g}", **params})))
    if not abs(fit.alpha - right) <= 1e-3 * right and not (rescaled is not None and abs(fit.alpha - 1) <= 1e-3):
        if abs(fit.alpha - 1.0) <= 1e-3:
            findings.append(Finding("attention-no-scale", function, message_data("sig_scores_unscaled", {
                "right": f"{np.sqrt(width):.4g}"})))
        else:
            findings.append(Finding("attention-wrong-scale", function, message_data("sig_scores_scaled", {
                "divisor": divisor_text(fit.alpha, sizes), "right": f"{np.sqrt(width):.4g}"})))
    if over is not None:
        findings.append(Finding("attention-softmax-wrong-axis", function,
                                message_data("sig_weights_normalized_over" if rescaled is None else
                                             "sig_weights_normalized_over_scaled", {
                                    "axes": axes_code(over, values.ndim, axis_letters)}),
                                alternatives=(("softmax-wrong-axis", "softmax"),)))
    return findings


def right_in_every_respect(Q: np.ndarray, K: np.ndarray, weights) -> bool:
    """Whether ``weights_findings(Q, K, weights, ...)`` is ``[]``, found without fitting every arrangement of K.

    Only a fit of the right arrangement over the keys gives no finding, and the fit tries that one first
    (the first axes, the first arrangement; the screen of ``_candidates`` keeps every fit that passes), so
    the one fit decides: a softmax over the keys of the scores at the right scale, rows summing to one.
    A rule that asks only this (is the layout the one mistake?) is spared the dozens of fits of every other
    arrangement and axis set."""
    if not is_array(weights, Q.shape[:-1] + (K.shape[-2],)):
        return False
    values = weights.astype(np.float64)
    if not np.isfinite(values).all() or (values <= 0).any():
        return False
    last = values.ndim - 1
    raw = Q.astype(np.float64) @ np.swapaxes(K.astype(np.float64), -1, -2)  # (B, H, T, S), as arranged_scores
    fitted = fit_logs(np.log(values), raw, (last,))
    if fitted is None or not (fitted[1] < FIT_TOLERANCE and fitted[0] > 0):
        return False
    right = 1.0 / np.sqrt(Q.shape[-1])
    return sums_to_one(values, last) and abs(fitted[0] - right) <= 1e-3 * right


def _unevenly_scaled(Q: np.ndarray, K: np.ndarray, weights, *, function: str) -> list[Finding] | None:
    """Weights no single scale explains but that are a softmax over the keys of each query's scores scaled by
    a factor of its own: 0 for every query (all weights 1/S: an integer scale that rounded to 0), or one that
    varies from query to query (the scores divided by each query's norm or largest score). None otherwise."""
    if not is_array(weights, Q.shape[:-1] + (K.shape[-2],)) or K.shape[-2] < 3:
        return None  # two keys: any scale fits each row, so a row's own scale shows nothing
    values = weights.astype(np.float64)
    if not np.isfinite(values).all() or (values <= 0).any() or not sums_to_one(values, values.ndim - 1):
        return None
    raw = Q.astype(np.float64) @ np.swapaxes(K.astype(np.float64), -1, -2)  # (B, H, T, S)
    centred_raw = raw - raw.mean(axis=-1, keepdims=True)
    size = (centred_raw ** 2).sum(axis=-1, keepdims=True)  # (B, H, T, 1)
    if (size < 1e-12 * max(float(np.abs(raw).max(initial=0.0)), 1e-300) ** 2).any():
        return None  # a query that scores every key alike: its row shows no scale
    right = 1.0 / np.sqrt(Q.shape[-1])
    if uniform_rows(values):
        return [Finding("attention-wrong-scale", function, message_data("sig_scores_zeroed", {
            "uniform": f"1/S = {1.0 / values.shape[-1]:.4g}", "right": f"{1.0 / right:.4g}"}))]
    logs = np.log(values)
    centred_logs = logs - logs.mean(axis=-1, keepdims=True)
    alphas = (centred_logs * centred_raw).sum(axis=-1, keepdims=True) / size  # each query's own scale
    spread = float(np.linalg.norm(centred_logs))
    if spread < 1e-9 or float(np.linalg.norm(centred_logs - alphas * centred_raw)) / spread >= FIT_TOLERANCE:
        return None
    if (alphas <= 0).any() or np.allclose(alphas, alphas.flat[0], rtol=1e-3, atol=0.0):
        return None  # one scale for every query would have been fitted already
    return [Finding("attention-wrong-scale", function, message_data("sig_scores_scaled_per_query", {
        "low": f"{1.0 / float(alphas.max()):.4g}", "high": f"{1.0 / float(alphas.min()):.4g}",
        "right": f"{1.0 / right:.4g}"}))]


def _normalized_over(values: np.ndarray, *, logs: np.ndarray, raw: np.ndarray, wider_than: int | tuple[int, ...]):
    """The smallest axis set wider than ``wider_than`` (an axis or a set of them) over which ``values`` sum to 1
    and the log-weights are the scores up to a constant on each slice (a real normalization there), or None."""
    inner = {wider_than} if isinstance(wider_than, int) else set(wider_than)
    for axes in axis_sets(values.ndim):
        if inner < set(axes) and sums_to_one(values, axes):
            fitted = fit_logs(logs, raw, axes)
            if fitted is not None and fitted[1] < FIT_TOLERANCE:
                return axes
    return None


def attention_sizes(Q: np.ndarray, K: np.ndarray) -> dict[str, int]:
    """The sizes a scale may have been taken from, by their names in feedback."""
    B, H, T, d_k = Q.shape
    return {"d_k": d_k, "D": H * d_k, "S": K.shape[-2], "T": T, "H": H, "B": B}
