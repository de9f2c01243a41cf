# expect: rope-frequency-exponent
"""In log space, with the pair index over d_k."""

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    return np.exp(-np.log(base) * np.arange(d_k // 2) / d_k)


def sinusoidal_positions(seq_len, d_model):
    angles = np.arange(seq_len)[:, None] * rope_frequencies(d_model)[None, :]
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def apply_rotary(x, positions, base=10000.0):
    angles = np.asarray(positions)[:, None] * rope_frequencies(x.shape[-1], base)[None, :]
    c, s = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = np.zeros(x.shape)
    out[..., 0::2] = x1 * c - x2 * s
    out[..., 1::2] = x1 * s + x2 * c
    return out


def rotary_attention(Q, K, V, offset=0):
    T, S = Q.shape[2], K.shape[2]
    q = apply_rotary(Q, np.arange(offset, offset + T))
    k = apply_rotary(K, np.arange(S))
    return attend(q, k, V)
