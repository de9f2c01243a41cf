# expect: combine-heads-no-transpose
# combine_heads flattens each batch entry in (H, T, d_k) memory order and cuts it into T rows of D numbers, so a row holds several positions of one head instead of every head at one position.
"""Multi-head attention with explicit Python loops and lists that are appended to.

Heads are sliced off one at a time and stacked; the combined output is built one
position at a time from a flattened buffer; projections are plain matmuls.
"""

import numpy as np


def softmax(x):
    biggest = np.max(x, axis=-1, keepdims=True)
    numerators = np.exp(x - biggest)
    totals = np.sum(numerators, axis=-1, keepdims=True)
    return numerators / totals


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, 2, 3) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not a multiple of num_heads={num_heads}")
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
        heads = []
        for i in range(self.num_heads):
            heads.append(x[:, :, i * self.d_k:(i + 1) * self.d_k])  # (B, T, d_k)
        return np.stack(heads, axis=1)  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        width = h * d_k
        flat = x.reshape(b, -1)  # (B, H * T * d_k)
        rows = []
        for pos in range(t):
            rows.append(flat[:, pos * width:(pos + 1) * width])  # (B, D)
        return np.stack(rows, axis=1)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        projected = []
        for x, W in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V)):
            projected.append(self.split_heads(x @ W))
        q, k, v = projected
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
