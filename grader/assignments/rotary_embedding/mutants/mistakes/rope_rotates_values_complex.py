# expect: rope-rotates-values
"""Complex-number rotation applied to every tensor in the attention call, values included."""

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    return base ** (-np.arange(0, d_k, 2, dtype=float) / d_k)


def sinusoidal_positions(seq_len, d_model):
    z = np.exp(1j * np.arange(seq_len)[:, None] * rope_frequencies(d_model))
    out = np.empty((seq_len, d_model))
    out[:, ::2], out[:, 1::2] = z.imag, z.real
    return out


def apply_rotary(x, positions, base=10000.0):
    z = x[..., ::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * np.asarray(positions)[:, None] * rope_frequencies(x.shape[-1], base))
    out = np.empty(x.shape)
    out[..., ::2], out[..., 1::2] = z.real, z.imag
    return out


def rotary_attention(Q, K, V, offset=0):
    S = K.shape[2]
    q = apply_rotary(Q, np.arange(Q.shape[2]) + offset)
    k, v = (apply_rotary(t, np.arange(S)) for t in (K, V))
    return attend(q, k, v)
