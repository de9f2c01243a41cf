# expect: combine-heads-wrong-order
# combine_heads treats the heads as a stack and pops them off the end, so they are concatenated last head first.
"""Multi-head attention that handles the heads as a Python list used like a stack.

split_heads stacks per-head slices; combine_heads turns the head axis into a list
and pops from it until it is empty, then concatenates what it collected.
"""

import numpy as np


def softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    p = np.exp(z)
    p /= np.sum(p, axis=-1, keepdims=True)
    return p


def scaled_dot_product_attention(Q, K, V):
    scale = 1.0 / np.sqrt(Q.shape[-1])
    weights = softmax(scale * (Q @ np.swapaxes(K, -1, -2)))  # (B, H, T, S)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model}, num_heads={num_heads}: heads must share the width evenly")
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
        d_k = self.d_k
        return np.stack([x[..., h * d_k:(h + 1) * d_k] for h in range(self.num_heads)], axis=1)

    def combine_heads(self, x):
        stack = list(np.moveaxis(x, 1, 0))  # H arrays of (B, T, d_k)
        collected = []
        while stack:
            collected.append(stack.pop())
        return np.concatenate(collected, axis=-1)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
