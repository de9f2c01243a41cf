# expect: correct
"""Plain Python loops over batch, heads and positions, with running sums kept by hand."""

import math

import numpy as np


def feature_map(x):
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    for index, value in np.ndenumerate(x):
        out[index] = value + 1.0 if value > 0 else math.exp(value)
    return out


def linear_attention(Q, K, V):
    B, H, T, _ = Q.shape
    out = np.zeros((B, H, T, V.shape[-1]))
    for b in range(B):
        for h in range(H):
            phi_k = feature_map(K[b, h])
            kv = phi_k.T @ V[b, h]
            z = phi_k.sum(axis=0)
            for t in range(T):
                phi_q = feature_map(Q[b, h, t])
                out[b, h, t] = phi_q @ kv / (phi_q @ z)
    return out


def causal_linear_attention(Q, K, V):
    B, H, T, d_k = Q.shape
    out = np.zeros((B, H, T, V.shape[-1]))
    for b in range(B):
        for h in range(H):
            kv = np.zeros((d_k, V.shape[-1]))
            z = np.zeros(d_k)
            for t in range(T):
                phi_k = feature_map(K[b, h, t])
                kv += np.outer(phi_k, V[b, h, t])
                z += phi_k
                phi_q = feature_map(Q[b, h, t])
                out[b, h, t] = phi_q @ kv / (phi_q @ z)
    return out


def linear_attention_step(q, k, v, state, normaliser):
    new_state, new_normaliser = state.copy(), normaliser.copy()
    out = np.zeros(v.shape)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            phi_k = feature_map(k[b, h])
            new_state[b, h] += np.outer(phi_k, v[b, h])
            new_normaliser[b, h] += phi_k
            phi_q = feature_map(q[b, h])
            out[b, h] = phi_q @ new_state[b, h] / (phi_q @ new_normaliser[b, h])
    return out, new_state, new_normaliser
