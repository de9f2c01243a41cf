# expect: correct
"""A correct solution in another style: each pair as one complex number, turned by exp(i angle)."""

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    assert d_k % 2 == 0
    return np.exp(-np.log(base) * np.arange(0, d_k, 2) / d_k)


def sinusoidal_positions(seq_len, d_model):
    phase = np.exp(1j * np.outer(np.arange(seq_len), rope_frequencies(d_model)))
    return np.stack([phase.imag, phase.real], axis=-1).reshape(seq_len, d_model)


def apply_rotary(x, positions, base=10000.0):
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    z = pairs[..., 0] + 1j * pairs[..., 1]
    z = z * np.exp(1j * np.outer(positions, rope_frequencies(x.shape[-1], base)))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rotary_attention(Q, K, V, offset=0):
    T, S = Q.shape[-2], K.shape[-2]
    return attend(apply_rotary(Q, range(offset, offset + T)), apply_rotary(K, range(S)), V)
