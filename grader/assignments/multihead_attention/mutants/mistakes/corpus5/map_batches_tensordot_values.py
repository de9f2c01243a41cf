# expect: attention-wrong-value-product, mha-wrong-projection
# attention mixes values with np.tensordot(weights, V, axes=(-1, -2)), which also pairs every batch/head of the weights with every batch/head of V; forward projects keys as np.dot(W_K, x.T).T, i.e. with W_K transposed
"""Per-batch processing with ``map`` and ``zip``.

The projections are applied one sequence at a time with ``np.dot``; the
attention contracts the key axis with ``np.tensordot``.
"""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    z = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return z / np.sum(z, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    weights = softmax(scores)
    # contract the key axis of the weights with the key axis of V
    out = np.tensordot(weights, V, axes=([-1], [-2]))
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        q = np.stack(list(map(lambda seq: np.dot(seq, self.W_Q), Q)))
        k = np.stack(list(map(lambda seq: np.dot(self.W_K, seq.T).T, K)))
        v = np.stack(list(map(lambda seq: np.dot(seq, self.W_V), V)))
        ctx, weights = scaled_dot_product_attention(
            *(self.split_heads(a) for a in (q, k, v)))
        out = np.stack([np.dot(row, self.W_O) for row in self.combine_heads(ctx)])
        if return_weights:
            return out, weights
        return out
