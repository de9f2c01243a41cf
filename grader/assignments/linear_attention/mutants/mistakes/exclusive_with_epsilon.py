# expect: linear-attention-exclusive-prefix
"""Exclusive running sums made safe with an epsilon, so the first row reads 0."""

import numpy as np


def feature_map(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention(Q, K, V):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    kv = np.einsum("bhsk,bhsv->bhkv", phi_k, V)
    z = phi_k.sum(axis=2)
    num = np.einsum("bhtk,bhkv->bhtv", phi_q, kv)
    den = np.einsum("bhtk,bhk->bht", phi_q, z)
    return num / den[..., None]


def causal_linear_attention(Q, K, V, eps=1e-6):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    outer = phi_k[..., :, None] * V[..., None, :]
    kv = np.cumsum(outer, axis=2) - outer
    z = np.cumsum(phi_k, axis=2) - phi_k
    return (phi_q[..., None, :] @ kv)[..., 0, :] / ((phi_q * z).sum(-1, keepdims=True) + eps)


def linear_attention_step(q, k, v, state, normaliser):
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = state + phi_k[..., :, None] * v[..., None, :]
    normaliser = normaliser + phi_k
    out = np.einsum("bhk,bhkv->bhv", phi_q, state) / np.sum(phi_q * normaliser, axis=-1, keepdims=True)
    return out, state, normaliser
