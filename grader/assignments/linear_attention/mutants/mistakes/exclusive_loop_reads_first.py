# expect: linear-attention-exclusive-prefix
"""A loop over positions that reads the sums before adding the token."""

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
    B, H, T, d_k = Q.shape
    kv = np.zeros((B, H, d_k, V.shape[-1]))
    z = np.zeros((B, H, d_k))
    out = np.zeros((B, H, T, V.shape[-1]))
    for t in range(T):
        phi_q, phi_k = feature_map(Q[:, :, t]), feature_map(K[:, :, t])
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, :, t] = np.einsum("bhk,bhkv->bhv", phi_q, kv) / np.einsum("bhk,bhk->bh", phi_q, z)[..., None]
        kv = kv + np.einsum("bhk,bhv->bhkv", phi_k, V[:, :, t])
        z = z + phi_k
    return out


def linear_attention_step(q, k, v, state, normaliser):
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = state + phi_k[..., :, None] * v[..., None, :]
    normaliser = normaliser + phi_k
    out = np.einsum("bhk,bhkv->bhv", phi_q, state) / np.sum(phi_q * normaliser, axis=-1, keepdims=True)
    return out, state, normaliser
