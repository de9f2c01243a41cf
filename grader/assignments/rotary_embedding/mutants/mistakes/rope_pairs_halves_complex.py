# expect: rope-pairs-halves
"""Complex numbers built from the two halves of the features."""

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    return 1.0 / np.power(base, np.arange(0, d_k, 2) / d_k)


def sinusoidal_positions(seq_len, d_model):
    angle = np.arange(seq_len)[:, None] * rope_frequencies(d_model)[None]
    return np.dstack([np.sin(angle), np.cos(angle)]).reshape(seq_len, d_model)


def apply_rotary(x, positions, base=10000.0):
    h = x.shape[-1] // 2
    z = (x[..., :h] + 1j * x[..., h:]) * np.exp(1j * np.outer(positions, rope_frequencies(2 * h, base)))
    return np.concatenate([z.real, z.imag], axis=-1)


def rotary_attention(Q, K, V, offset=0):
    return attend(apply_rotary(Q, offset + np.arange(Q.shape[2])), apply_rotary(K, np.arange(K.shape[2])), V)
