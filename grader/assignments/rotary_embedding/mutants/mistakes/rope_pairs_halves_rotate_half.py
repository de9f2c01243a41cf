# expect: rope-pairs-halves
"""The GPT-NeoX layout: rotate_half, frequencies tiled twice."""

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


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rotary(x, positions, base=10000.0):
    freqs = rope_frequencies(x.shape[-1], base)
    emb = np.concatenate([freqs, freqs])[None, :] * np.asarray(positions)[:, None]
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def rotary_attention(Q, K, V, offset=0):
    T, S = Q.shape[2], K.shape[2]
    q = apply_rotary(Q, np.arange(offset, offset + T))
    k = apply_rotary(K, np.arange(S))
    return attend(q, k, V)
