# expect: correct
# Correct: softmax recurses down to 1-D rows, attention loops over batch and heads with np.dot, heads are sliced out and np.concatenate'd back.
"""Multi-head attention written with small loops I can follow by hand."""

import numpy as np


def softmax(x):
    """Stable softmax over the last axis, for an array of any rank.

    A 1-D row is the base case; anything bigger is a stack of smaller arrays.
    """
    x = np.asarray(x)
    if x.ndim > 1:
        return np.stack([softmax(sub) for sub in x])
    top = np.max(x)
    e = np.exp(x - top)
    return e / np.sum(e)


def scaled_dot_product_attention(Q, K, V):
    """Q (B, H, T, d_k), K/V (B, H, S, d_k) -> (out (B, H, T, d_k), weights (B, H, T, S))."""
    d_k = Q.shape[-1]
    outs, maps = [], []
    for q_b, k_b, v_b in zip(Q, K, V):            # over the batch
        head_outs, head_maps = [], []
        for q, k, v in zip(q_b, k_b, v_b):        # over the heads: (T, d_k), (S, d_k)
            w = softmax(np.dot(q, k.T) / np.sqrt(d_k))   # (T, S)
            head_maps.append(w)
            head_outs.append(np.dot(w, v))               # (T, d_k)
        outs.append(np.stack(head_outs))
        maps.append(np.stack(head_maps))
    return np.stack(outs), np.stack(maps)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model must be a multiple of num_heads")
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
        """(B, T, D) -> (B, H, T, d_k): head i gets columns i*d_k:(i+1)*d_k."""
        pieces = []
        for i in range(self.num_heads):
            pieces.append(x[:, :, i * self.d_k:(i + 1) * self.d_k])   # (B, T, d_k)
        return np.stack(pieces, axis=1)

    def combine_heads(self, x):
        """(B, H, T, d_k) -> (B, T, D): heads side by side again, in order."""
        return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
