# expect: linear-attention-elu-without-one
"""The + 1 only on the positive branch, in a loop."""

import numpy as np


def feature_map(x):
    flat = np.asarray(x, dtype=float).ravel()
    out = np.array([value + 1 if value > 0 else np.exp(value) - 1 for value in flat])
    return out.reshape(np.shape(x))


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
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = state + phi_k[..., :, None] * v[..., None, :]
    normaliser = normaliser + phi_k
    out = np.einsum("bhk,bhkv->bhv", phi_q, state) / np.sum(phi_q * normaliser, axis=-1, keepdims=True)
    return out, state, normaliser
