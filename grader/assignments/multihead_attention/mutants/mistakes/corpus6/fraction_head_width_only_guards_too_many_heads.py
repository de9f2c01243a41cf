# expect: mha-no-divisibility-check
# The constructor only refuses more heads than features (Fraction below 1) and floors the head width, so a d_model that num_heads does not divide is accepted.
import math
from fractions import Fraction

import numpy as np


def softmax(x):
    arr = np.asarray(x, dtype=float)
    peak = arr.max(axis=-1, keepdims=True)
    w = np.exp(arr - peak)
    return w / w.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    # 1/sqrt(d_k) = (1/d_k) ** (1/2), kept exact until the last moment
    inv_scale = float(Fraction(1, d_k)) ** 0.5
    logits = (Q @ np.swapaxes(K, -1, -2)) * inv_scale
    probs = softmax(logits)
    return probs @ V, probs


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        ratio = Fraction(d_model, num_heads)
        if ratio < 1:
            raise ValueError(f"cannot have {num_heads} heads with only {d_model} features")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = math.floor(ratio)
        rng = np.random.default_rng(0)
        scale = 1.0 / math.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        b, t = x.shape[0], x.shape[1]
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, probs = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, probs
        return out
