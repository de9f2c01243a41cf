# expect: bias-scaled-with-scores
"""Folds the bias into each head's scores in a loop, then scales them."""

import numpy as np


def alibi_slopes(num_heads):
    def ladder(n):
        start = 2 ** (-8 / n)
        return np.array([start ** (i + 1) for i in range(n)])

    n = 2 ** int(np.log2(num_heads))
    slopes = ladder(n)
    if n < num_heads:
        slopes = np.concatenate([slopes, ladder(2 * n)[::2][: num_heads - n]])
    return slopes


def alibi_bias(num_heads, T, S):
    i = np.arange(S - T, S)[:, None]
    j = np.arange(S)[None, :]
    return -alibi_slopes(num_heads)[:, None, None] * np.abs(i - j)


def sliding_window_mask(T, S, window):
    i = np.arange(S - T, S)[:, None]
    j = np.arange(S)[None, :]
    return (j <= i) & (j > i - window)


def biased_attention(Q, K, V, bias=None, mask=None):
    B, H, T, d = Q.shape
    bias = np.zeros((1, 1, 1, 1)) if bias is None else np.broadcast_to(bias, (B, H, T, K.shape[2]))
    out = np.empty((B, H, T, V.shape[-1]))
    for b in range(B):
        for h in range(H):
            raw = Q[b, h] @ K[b, h].T + bias[min(b, bias.shape[0] - 1), min(h, bias.shape[1] - 1)]
            logits = raw / d ** 0.5
            if mask is not None:
                logits = np.where(np.broadcast_to(mask, (B, H) + logits.shape)[b, h], logits, -np.inf)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            out[b, h] = (p / p.sum(axis=1, keepdims=True)) @ V[b, h]
    return out


def alibi_attention(Q, K, V, window=None):
    H, T, S = Q.shape[1], Q.shape[2], K.shape[2]
    mask = sliding_window_mask(T, S, S if window is None else window)
    return biased_attention(Q, K, V, alibi_bias(H, T, S), mask)
