# expect: correct
"""Multi-head attention in linear-algebra terms: a head is the product with a block of columns of the identity
matrix, combining adds each head back through the transposed block; softmax finds the row max with np.partition."""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    top = np.partition(x, -1, axis=-1)[..., -1:]  # the largest entry of each row, (..., 1)
    e = np.exp(x - top)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model}, num_heads={num_heads}: the heads would not be equally wide")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        sd = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, sd, (d_model, d_model))
        self.W_K = rng.normal(0.0, sd, (d_model, d_model))
        self.W_V = rng.normal(0.0, sd, (d_model, d_model))
        self.W_O = rng.normal(0.0, sd, (d_model, d_model))

    def _selectors(self):
        # E_h = I[:, h*d_k:(h+1)*d_k] is (D, d_k); x @ E_h picks head h's features.
        eye = np.eye(self.num_heads * self.d_k)
        return [eye[:, h * self.d_k:(h + 1) * self.d_k] for h in range(self.num_heads)]

    def split_heads(self, x):
        return np.stack([x @ E for E in self._selectors()], axis=1)  # (B, H, T, d_k)

    def combine_heads(self, x):
        # sum_h head_h @ E_h^T puts head h back into its own columns, zeros elsewhere.
        return sum(x[:, h] @ E.T for h, E in enumerate(self._selectors()))  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
