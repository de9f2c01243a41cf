# expect: softmax-unstable, combine-heads-no-transpose
# Two mistakes: softmax exponentiates the raw logits with no max shift (overflows on large logits), and combine_heads reshapes (B, H, T, d_k) straight to (B, T, D) without moving the head axis back first.
"""Multi-head attention -- cleaned up from my notebook.

Works on a batch (B, T, D), and also on one sentence (T, D) which is what I
mostly tried in the notebook.
"""

import numpy as np


def softmax(x):
    # softmax(x)_i = e^{x_i} / sum_j e^{x_j}, along the last axis
    e = np.exp(x)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    attn = softmax(scores)
    return attn @ V, attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
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
        B, T, D = x.shape
        x = x.reshape(B, T, self.num_heads, self.d_k)
        return x.transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        single = Q.ndim == 2
        if single:  # one sentence from the notebook: (T, D) -> (1, T, D)
            Q, K, V = Q[np.newaxis], K[np.newaxis], V[np.newaxis]
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, attn = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if single:
            out, attn = out[0], attn[0]
        if return_weights:
            return out, attn
        return out
