# expect: correct
# Debug logging through a module logger (no prints); forward does the whole computation inline while the helpers exist separately, and heads are merged with np.block.
import logging

import numpy as np

log = logging.getLogger(__name__)
log.addHandler(logging.NullHandler())


def softmax(x):
    x = np.asarray(x)
    peak = np.max(x, axis=-1, keepdims=True)
    log.debug("softmax: shape=%s dtype=%s", x.shape, x.dtype)
    shifted = np.subtract(x, peak, dtype=np.float64)   # fresh float64 buffer, x untouched
    np.exp(shifted, out=shifted)
    shifted /= np.sum(shifted, axis=-1, keepdims=True)
    return shifted


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    log.debug("attention: Q%s K%s V%s", Q.shape, K.shape, V.shape)
    scores = (Q @ K.transpose(0, 1, 3, 2)) / np.sqrt(d_k)
    weights = softmax(scores)
    out = weights @ V
    log.debug("attention: out%s weights%s", out.shape, weights.shape)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        log.debug("MultiHeadAttention(d_model=%d, num_heads=%d)", d_model, num_heads)
        if num_heads <= 0 or d_model % num_heads:
            log.error("d_model=%d cannot be split into %d heads", d_model, num_heads)
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        pieces = [x[:, :, h * self.d_k:(h + 1) * self.d_k] for h in range(self.num_heads)]
        log.debug("split_heads: %d pieces of %s", len(pieces), pieces[0].shape)
        return np.stack(pieces, axis=1)                      # (B, H, T, d_k)

    def combine_heads(self, x):
        merged = np.block([x[:, h] for h in range(x.shape[1])])  # along the last axis
        log.debug("combine_heads: %s -> %s", x.shape, merged.shape)
        return merged

    def forward(self, Q, K, V, return_weights=False):
        B, T, D = Q.shape
        S = K.shape[1]
        H, dk = self.num_heads, self.d_k
        log.debug("forward: B=%d T=%d S=%d D=%d H=%d", B, T, S, D, H)
        # projections
        q = Q @ self.W_Q
        k = K @ self.W_K
        v = V @ self.W_V
        # heads, written out here so the whole pipeline is readable in one place
        q = q.reshape(B, T, H, dk).transpose(0, 2, 1, 3)
        k = k.reshape(B, S, H, dk).transpose(0, 2, 1, 3)
        v = v.reshape(B, S, H, dk).transpose(0, 2, 1, 3)
        # attention, inline
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk)
        scores = scores - scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights = weights / weights.sum(axis=-1, keepdims=True)
        heads = weights @ v                                   # (B, H, T, dk)
        log.debug("forward: weights row sums min=%.3g", weights.sum(-1).min())
        # merge heads side by side and mix
        merged = np.block([heads[:, h] for h in range(H)])    # (B, T, D)
        out = merged @ self.W_O
        if return_weights:
            return out, weights
        return out
