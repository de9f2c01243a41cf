# expect: correct
"""A correct solution in another style: one token at a time, with exact sums."""

import math

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
    out = np.empty(x.shape)
    for index in np.ndindex(*x.shape[:-1]):
        row = [float(value) for value in x[index]]
        mean = math.fsum(row) / len(row)
        variance = math.fsum((value - mean) ** 2 for value in row) / len(row)
        scale = 1.0 / math.sqrt(variance + eps)
        out[index] = [(value - mean) * scale * g + b for value, g, b in zip(row, gamma, beta)]
    return out


def rms_norm(x, gamma, eps=1e-6):
    out = np.empty(x.shape)
    for index in np.ndindex(*x.shape[:-1]):
        row = x[index]
        rms = math.sqrt(math.fsum(float(value) ** 2 for value in row) / len(row) + eps)
        out[index] = [value / rms * g for value, g in zip(row, gamma)]
    return out


def pre_norm_block(x, gamma, beta, W_qkv, W_o, n_heads):
    residual = x.copy()
    normed = layer_norm(x, gamma, beta)
    residual += self_attention(normed, W_qkv, W_o, n_heads)
    return residual
