# expect: linear-attention-cumsum-axis
"""axis=-2 for both sums: the positions of phi(K), but the key features of the outer products."""

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
    kv = np.cumsum(np.einsum("bhtk,bhtv->bhtkv", phi_k, V), axis=-2)
    z = np.cumsum(phi_k, axis=-2)
    return np.einsum("bhtk,bhtkv->bhtv", phi_q, kv) / np.einsum("bhtk,bhtk->bht", phi_q, z)[..., None]


def linear_attention_step(q, k, v, state, normaliser):
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = state + phi_k[..., :, None] * v[..., None, :]
    normaliser = normaliser + phi_k
    out = np.einsum("bhk,bhkv->bhv", phi_q, state) / np.sum(phi_q * normaliser, axis=-1, keepdims=True)
    return out, state, normaliser
