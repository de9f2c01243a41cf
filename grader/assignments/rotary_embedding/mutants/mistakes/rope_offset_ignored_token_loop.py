# expect: rope-offset-ignored
"""Decodes query by query, each query turned by its index in Q rather than its position."""

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    return np.array([1.0 / base ** (2 * i / d_k) for i in range(d_k // 2)])


def sinusoidal_positions(seq_len, d_model):
    table = np.zeros((seq_len, d_model))
    for p in range(seq_len):
        table[p, 0::2] = np.sin(p * rope_frequencies(d_model))
        table[p, 1::2] = np.cos(p * rope_frequencies(d_model))
    return table


def apply_rotary(x, positions, base=10000.0):
    out = np.array(x, dtype=float, copy=True)
    w = rope_frequencies(x.shape[-1], base)
    for t, p in enumerate(positions):
        c, s = np.cos(p * w), np.sin(p * w)
        a, b = x[..., t, 0::2], x[..., t, 1::2]
        out[..., t, 0::2] = a * c - b * s
        out[..., t, 1::2] = a * s + b * c
    return out


def rotary_attention(Q, K, V, offset=0):
    keys = apply_rotary(K, list(range(K.shape[2])))
    rows = []
    for t in range(Q.shape[2]):
        query = apply_rotary(Q[:, :, t:t + 1], [t])
        rows.append(attend(query, keys, V))
    return np.concatenate(rows, axis=2)
