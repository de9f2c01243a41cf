# expect: correct
"""A correct solution in another style: triangles for the window, a log-sum-exp softmax."""

import numpy as np
from scipy.special import logsumexp


def alibi_slopes(num_heads):
    n = 2 ** int(np.floor(np.log2(num_heads)))
    exponents = np.arange(1, n + 1) * 8.0 / n
    slopes = 1.0 / 2.0 ** exponents
    if n < num_heads:
        doubled = 1.0 / 2.0 ** (np.arange(1, 2 * n + 1, 2) * 8.0 / (2 * n))
        slopes = np.append(slopes, doubled[: num_heads - n])
    return slopes


def alibi_bias(num_heads, T, S):
    distance = np.abs(np.subtract.outer(np.arange(S), np.arange(S)))[S - T:]  # rows of the last T queries
    return np.multiply.outer(-alibi_slopes(num_heads), distance)


def sliding_window_mask(T, S, window):
    ones = np.ones((T, S), dtype=bool)
    return np.tril(ones, k=S - T) & ~np.tril(ones, k=S - T - window)


def biased_attention(Q, K, V, bias=None, mask=None):
    logits = np.matmul(Q, np.swapaxes(K, 2, 3)) * Q.shape[-1] ** -0.5
    logits = logits + (0.0 if bias is None else bias)
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    return np.exp(logits - logsumexp(logits, axis=-1, keepdims=True)) @ V


def alibi_attention(Q, K, V, window=None):
    _, H, T, _ = Q.shape
    S = K.shape[-2]
    if window is None:
        mask = np.tril(np.ones((T, S), dtype=bool), k=S - T)
    else:
        mask = sliding_window_mask(T, S, window)
    return biased_attention(Q, K, V, bias=alibi_bias(H, T, S), mask=mask)
