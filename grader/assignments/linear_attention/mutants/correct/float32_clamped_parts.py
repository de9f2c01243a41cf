# expect: correct
"""float32 throughout, the map as max(x, 0) + exp(min(x, 0)), matmul instead of einsum and a tiny epsilon in the denominator."""

import numpy as np


def feature_map(x):
    x = np.asarray(x, dtype=np.float32)
    return np.maximum(x, 0) + np.exp(np.minimum(x, 0))


def linear_attention(Q, K, V):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    kv = np.swapaxes(phi_k, -1, -2) @ V.astype(np.float32)
    z = phi_k.sum(axis=-2, keepdims=True)
    return (phi_q @ kv) / (phi_q @ np.swapaxes(z, -1, -2) + 1e-12)


def causal_linear_attention(Q, K, V):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    kv = np.cumsum(phi_k[..., None] * V.astype(np.float32)[..., None, :], axis=-3)
    z = np.cumsum(phi_k, axis=-2)
    num = (phi_q[..., None, :] @ kv)[..., 0, :]
    return num / ((phi_q * z).sum(-1, keepdims=True) + 1e-12)


def linear_attention_step(q, k, v, state, normaliser):
    phi_q, phi_k = feature_map(q), feature_map(k)
    state = state.astype(np.float32) + phi_k[..., :, None] * v.astype(np.float32)[..., None, :]
    normaliser = normaliser.astype(np.float32) + phi_k
    out = (phi_q[..., None, :] @ state)[..., 0, :] / (phi_q * normaliser).sum(-1, keepdims=True)
    return out, state, normaliser
