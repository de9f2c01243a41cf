# expect: rope-rotates-in-place
"""Right values, but the caller's queries and keys are overwritten with their rotations."""

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    return 1.0 / base ** (np.arange(0, d_k, 2) / d_k)


def sinusoidal_positions(seq_len, d_model):
    angles = np.arange(seq_len)[:, None] * rope_frequencies(d_model)[None, :]
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def apply_rotary(x, positions, base=10000.0):
    angles = np.outer(positions, rope_frequencies(x.shape[-1], base))
    even, odd = x[..., 0::2].copy(), x[..., 1::2].copy()
    x[..., 0::2] = even * np.cos(angles) - odd * np.sin(angles)
    x[..., 1::2] = even * np.sin(angles) + odd * np.cos(angles)
    return x


def rotary_attention(Q, K, V, offset=0):
    q = apply_rotary(Q, np.arange(offset, offset + Q.shape[2]))
    k = apply_rotary(K, np.arange(K.shape[2]))
    return attend(q, k, V)
