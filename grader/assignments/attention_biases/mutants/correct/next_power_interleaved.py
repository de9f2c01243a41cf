# expect: correct
"""A correct solution in another style: the ladder of the next power of two, odd places first, then even."""

import numpy as np


def alibi_slopes(num_heads):
    padded = 1 << (num_heads - 1).bit_length()  # the next power of two, or num_heads itself
    slopes = 1.0 / np.power(2.0, np.arange(1, padded + 1) * 8.0 / padded)
    if padded != num_heads:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:num_heads]
    return slopes


def alibi_bias(num_heads, T, S):
    offsets = np.arange(-(S - 1), 1)  # key minus query for the newest query: -(S - 1) .. 0
    full = -np.abs(offsets[None, :] - offsets[:, None])  # (S, S)
    return alibi_slopes(num_heads).reshape(num_heads, 1, 1) * full[None, S - T:, :]


def sliding_window_mask(T, S, window):
    i = np.arange(S - T, S)[:, None]
    j = np.arange(S)[None, :]
    return (j <= i) & (j > i - window)


def biased_attention(Q, K, V, bias=None, mask=None):
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V


def alibi_attention(Q, K, V, window=None):
    T, S = Q.shape[-2], K.shape[-2]
    keep = sliding_window_mask(T, S, window if window is not None else S)
    return biased_attention(Q, K, V, alibi_bias(Q.shape[1], T, S)[None], keep[None, None])
