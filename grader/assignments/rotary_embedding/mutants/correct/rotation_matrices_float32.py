# expect: correct
"""A correct solution in another style: explicit 2x2 rotation matrices, einsum, float32, own attention."""

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    return (1.0 / np.power(np.float32(base), np.arange(d_k // 2, dtype=np.float32) * 2 / d_k)).astype(np.float32)


def sinusoidal_positions(seq_len, d_model):
    table = np.zeros((seq_len, d_model), dtype=np.float32)
    w = rope_frequencies(d_model)
    for p in range(seq_len):
        table[p, ::2] = np.sin(p * w)
        table[p, 1::2] = np.cos(p * w)
    return table


def apply_rotary(x, positions, base=10000.0):
    a = np.multiply.outer(np.asarray(positions, dtype=np.float64), rope_frequencies(x.shape[-1], base))
    c, s = np.cos(a), np.sin(a)
    R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (T, d/2, 2, 2)
    pairs = x.astype(np.float32).reshape(x.shape[:-1] + (x.shape[-1] // 2, 2))
    return np.einsum("tpij,...tpj->...tpi", R.astype(np.float32), pairs).reshape(x.shape)


def rotary_attention(Q, K, V, offset=0):
    q = apply_rotary(Q, offset + np.arange(Q.shape[2]))
    k = apply_rotary(K, np.arange(K.shape[2]))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(np.float32(Q.shape[-1]))
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    return (scores / scores.sum(-1, keepdims=True)) @ V.astype(np.float32)
