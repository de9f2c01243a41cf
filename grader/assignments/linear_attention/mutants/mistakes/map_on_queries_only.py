# expect: linear-attention-feature-map-missing
"""Only the queries go through the feature map."""

import numpy as np


def feature_map(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention(Q, K, V):
    phi_q = feature_map(Q)
    kv = np.einsum("bhsk,bhsv->bhkv", K, V)
    z = K.sum(axis=2)
    return np.einsum("bhtk,bhkv->bhtv", phi_q, kv) / np.einsum("bhtk,bhk->bht", phi_q, z)[..., None]


def causal_linear_attention(Q, K, V):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    kv = np.cumsum(phi_k[..., :, None] * V[..., None, :], axis=2)
    z = np.cumsum(phi_k, axis=2)
    num = np.einsum("bhtk,bhtkv->bhtv", phi_q, kv)
    den = np.sum(phi_q * z, axis=-1, keepdims=True)
    return num / den


def linear_attention_step(q, k, v, state, normaliser):
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = state + phi_k[..., :, None] * v[..., None, :]
    normaliser = normaliser + phi_k
    out = np.einsum("bhk,bhkv->bhv", phi_q, state) / np.sum(phi_q * normaliser, axis=-1, keepdims=True)
    return out, state, normaliser
