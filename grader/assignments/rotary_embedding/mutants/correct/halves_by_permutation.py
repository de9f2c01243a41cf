# expect: correct
"""A correct solution in another style: features permuted into the halves layout, rotate_half, permuted back."""

import math

import numpy as np


def attend(queries, keys, values):
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)


def rope_frequencies(d_k, base=10000.0):
    return np.array([base ** (-(2 * i) / d_k) for i in range(d_k // 2)])


def sinusoidal_positions(seq_len, d_model):
    rows = []
    for p in range(seq_len):
        row = []
        for w in rope_frequencies(d_model):
            row += [math.sin(p * w), math.cos(p * w)]
        rows.append(row)
    return np.array(rows)


def apply_rotary(x, positions, base=10000.0):
    d = x.shape[-1]
    order = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])  # evens first, then odds
    halves = x[..., order]
    freqs = np.tile(rope_frequencies(d, base), 2)
    angle = np.asarray(positions)[:, None] * freqs[None, :]
    rotated_half = np.concatenate([-halves[..., d // 2:], halves[..., : d // 2]], axis=-1)
    turned = halves * np.cos(angle) + rotated_half * np.sin(angle)
    return turned[..., np.argsort(order)]


def rotary_attention(Q, K, V, offset=0):
    outputs = []
    keys = apply_rotary(K, np.arange(K.shape[2]))
    for t in range(Q.shape[2]):  # one query at a time, as a decoder would
        query = apply_rotary(Q[:, :, t:t + 1], np.array([offset + t]))
        outputs.append(attend(query, keys, V))
    return np.concatenate(outputs, axis=2)
