# expect: correct
"""The causal form as the recurrent step run over the positions, and the full form as the causal form's last row."""

import numpy as np


def feature_map(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0))) + 1


def linear_attention(Q, K, V):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    kv = np.einsum("...sk,...sv->...kv", phi_k, V)
    return np.einsum("...tk,...kv->...tv", phi_q, kv) / np.einsum("...tk,...k->...t", phi_q, phi_k.sum(-2))[..., None]


def causal_linear_attention(Q, K, V):
    B, H, T, d_k = Q.shape
    state, normaliser = np.zeros((B, H, d_k, V.shape[-1])), np.zeros((B, H, d_k))
    rows = []
    for t in range(T):
        row, state, normaliser = linear_attention_step(Q[:, :, t], K[:, :, t], V[:, :, t], state, normaliser)
        rows.append(row)
    return np.stack(rows, axis=2)


def linear_attention_step(q, k, v, state, normaliser):
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = state + phi_k[..., :, None] * v[..., None, :]
    normaliser = normaliser + phi_k
    out = np.einsum("bhk,bhkv->bhv", phi_q, state) / np.sum(phi_q * normaliser, axis=-1, keepdims=True)
    return out, state, normaliser
