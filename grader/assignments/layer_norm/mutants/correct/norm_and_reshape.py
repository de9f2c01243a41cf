# expect: correct
"""A correct solution in another style: flattened tokens, the RMS from np.linalg.norm, in-place work on copies."""

import numpy as np

def self_attention(x, W_qkv, W_o, n_heads):
    B, T, D = x.shape
    d_k = D // n_heads
    q, k, v = np.split(x @ W_qkv, 3, axis=-1)
    q, k, v = (part.reshape(B, T, n_heads, d_k).transpose(0, 2, 1, 3) for part in (q, k, v))
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    logits = np.where(np.tril(np.ones((T, T), dtype=bool)), logits, -np.inf)
    logits = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    weights /= weights.sum(axis=-1, keepdims=True)
    heads = weights @ v
    return heads.transpose(0, 2, 1, 3).reshape(B, T, D) @ W_o


def layer_norm(x, gamma, beta, eps=1e-5):
    flat = np.array(x, dtype=np.float64).reshape(-1, x.shape[-1])  # a copy: (tokens, D)
    flat -= flat.mean(axis=1)[:, None]
    flat /= np.sqrt(np.square(flat).mean(axis=1) + eps)[:, None]
    flat *= gamma
    flat += beta
    return flat.reshape(x.shape)


def rms_norm(x, gamma, eps=1e-6):
    d = x.shape[-1]
    rms = np.sqrt(np.linalg.norm(x, axis=-1, keepdims=True) ** 2 / d + eps)
    return np.divide(x, rms) * gamma


def pre_norm_block(x, gamma, beta, W_qkv, W_o, n_heads):
    out = self_attention(layer_norm(x, gamma=gamma, beta=beta, eps=1e-5), W_qkv, W_o, n_heads)
    out += x
    return out
