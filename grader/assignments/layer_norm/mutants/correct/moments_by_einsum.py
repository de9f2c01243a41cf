# expect: correct
"""A correct solution in another style: raw moments E[x^2] - E[x]^2 by einsum."""

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
    d = x.shape[-1]
    first = np.einsum("...d->...", x)[..., None] / d
    second = np.einsum("...d,...d->...", x, x)[..., None] / d
    variance = np.maximum(second - first ** 2, 0.0)
    return np.einsum("...d,d->...d", (x - first) * (variance + eps) ** -0.5, gamma) + beta


def rms_norm(x, gamma, eps=1e-6):
    mean_square = np.einsum("...d,...d->...", x, x) / x.shape[-1]
    return np.einsum("...d,d->...d", x, gamma) * (mean_square + eps)[..., None] ** -0.5


def pre_norm_block(x, gamma, beta, W_qkv, W_o, n_heads):
    sublayer = lambda value: self_attention(value, W_qkv, W_o, n_heads)
    norm = lambda value: layer_norm(value, gamma, beta)
    return np.add(x, sublayer(norm(x)))
