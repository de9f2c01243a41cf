# expect: rope-pairs-halves
"""rotate_half, but each frequency repeated for two neighbours."""

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
    d = x.shape[-1]
    freqs = np.repeat(rope_frequencies(d, base), 2)  # (d,): w0 w0 w1 w1 ...
    angle = np.asarray(positions)[:, None] * freqs
    swapped = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * np.cos(angle) + swapped * np.sin(angle)


def rotary_attention(Q, K, V, offset=0):
    T, S = Q.shape[2], K.shape[2]
    q = apply_rotary(Q, np.arange(offset, offset + T))
    k = apply_rotary(K, np.arange(S))
    return attend(q, k, V)
