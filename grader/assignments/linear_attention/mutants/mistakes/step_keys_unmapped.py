# expect: linear-attention-feature-map-missing
"""The step maps the query but adds the raw key to the sums."""

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


def causal_linear_attention(Q, K, V):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    kv = np.cumsum(phi_k[..., :, None] * V[..., None, :], axis=2)
    z = np.cumsum(phi_k, axis=2)
    num = np.einsum("bhtk,bhtkv->bhtv", phi_q, kv)
    den = np.sum(phi_q * z, axis=-1, keepdims=True)
    return num / den


def linear_attention_step(q, k, v, state, normaliser):
    phi_q = feature_map(q)
    state = state + k[..., :, None] * v[..., None, :]
    normaliser = normaliser + k
    out = np.einsum("bhk,bhkv->bhv", phi_q, state) / np.sum(phi_q * normaliser, axis=-1, keepdims=True)
    return out, state, normaliser
