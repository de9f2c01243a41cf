# expect: norm-residual-source
"""Returns the sublayer's output with no skip connection."""

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
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def rms_norm(x, gamma, eps=1e-6):
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps) * gamma


def pre_norm_block(x, gamma, beta, W_qkv, W_o, n_heads):
    return self_attention(layer_norm(x, gamma, beta), W_qkv, W_o, n_heads)
