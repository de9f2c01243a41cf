# expect: correct
"""A correct solution in another style: plain loops and the math module."""

import math

import numpy as np


def alibi_slopes(num_heads):
    def power_of_two_slopes(n):
        ratio = 2 ** (-8 / n)
        return [ratio ** (k + 1) for k in range(n)]

    if math.log2(num_heads).is_integer():
        return np.array(power_of_two_slopes(num_heads))
    n = 2 ** math.floor(math.log2(num_heads))
    extra = power_of_two_slopes(2 * n)[0::2]
    return np.array(power_of_two_slopes(n) + extra[: num_heads - n])


def alibi_bias(num_heads, T, S):
    slopes = alibi_slopes(num_heads)
    out = np.empty((num_heads, T, S))
    for h in range(num_heads):
        for t in range(T):
            for s in range(S):
                out[h, t, s] = -slopes[h] * abs((S - T + t) - s)
    return out


def sliding_window_mask(T, S, window):
    mask = np.zeros((T, S), dtype=bool)
    for t in range(T):
        p = S - T + t
        for s in range(max(0, p - window + 1), p + 1):
            mask[t, s] = True
    return mask


def biased_attention(Q, K, V, bias=None, mask=None):
    B, H, T, d = Q.shape
    S = K.shape[2]
    full_bias = np.zeros((B, H, T, S)) if bias is None else np.broadcast_to(bias, (B, H, T, S))
    full_mask = np.ones((B, H, T, S), dtype=bool) if mask is None else np.broadcast_to(mask, (B, H, T, S))
    out = np.zeros((B, H, T, V.shape[-1]))
    for b in range(B):
        for h in range(H):
            for t in range(T):
                logits = [Q[b, h, t] @ K[b, h, s] / math.sqrt(d) + full_bias[b, h, t, s]
                          for s in range(S) if full_mask[b, h, t, s]]
                keys = [s for s in range(S) if full_mask[b, h, t, s]]
                top = max(logits)
                e = [math.exp(x - top) for x in logits]
                total = sum(e)
                for s, weight in zip(keys, e):
                    out[b, h, t] += weight / total * V[b, h, s]
    return out


def alibi_attention(Q, K, V, window=None):
    H, T, S = Q.shape[1], Q.shape[2], K.shape[2]
    mask = sliding_window_mask(T, S, S if window is None else window)
    return biased_attention(Q, K, V, alibi_bias(H, T, S), mask)
