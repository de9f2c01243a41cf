# expect: correct
"""The (T, S) kernel matrix built in full and normalised by rows, with a lower-triangular mask for the causal form: O(N^2), but the same values."""

import numpy as np


def feature_map(x):
    x = np.asarray(x, dtype=float)
    return np.piecewise(x, [x > 0], [lambda a: a + 1.0, np.exp])


def linear_attention(Q, K, V):
    weights = feature_map(Q) @ np.swapaxes(feature_map(K), -1, -2)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V


def causal_linear_attention(Q, K, V):
    T = Q.shape[-2]
    weights = feature_map(Q) @ np.swapaxes(feature_map(K), -1, -2)
    weights = weights * np.tril(np.ones((T, T)))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ V


def linear_attention_step(q, k, v, state, normaliser):
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = state + phi_k[..., :, None] * v[..., None, :]
    normaliser = normaliser + phi_k
    out = np.einsum("bhk,bhkv->bhv", phi_q, state) / np.sum(phi_q * normaliser, axis=-1, keepdims=True)
    return out, state, normaliser
