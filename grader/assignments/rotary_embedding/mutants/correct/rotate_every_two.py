# expect: correct
"""A correct solution in another style: the GPT-J way, rotate_every_two with each angle repeated for a pair."""

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    inv_freq = 1.0 / (base ** (np.arange(0, d_k, 2).astype(np.float64) / d_k))
    return inv_freq


def sinusoidal_positions(seq_len, d_model):
    sinusoid = np.einsum("i,j->ij", np.arange(seq_len, dtype=np.float64), rope_frequencies(d_model))
    sin, cos = np.sin(sinusoid), np.cos(sinusoid)
    return np.stack((sin, cos), axis=-1).reshape(seq_len, -1)


def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return np.stack((-x2, x1), axis=-1).reshape(x.shape)


def apply_rotary(x, positions, base=10000.0):
    sinusoid = np.einsum("i,j->ij", np.asarray(positions, dtype=np.float64), rope_frequencies(x.shape[-1], base))
    sin = np.repeat(np.sin(sinusoid), 2, axis=-1)
    cos = np.repeat(np.cos(sinusoid), 2, axis=-1)
    return x * cos + rotate_every_two(x) * sin


def rotary_attention(Q, K, V, offset=0):
    q_pos = np.arange(Q.shape[-2]) + offset
    k_pos = np.arange(K.shape[-2])
    return attend(apply_rotary(Q, q_pos), apply_rotary(K, k_pos), V)
