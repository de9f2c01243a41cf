# expect: attention-causal-mask
# attention always hides keys whose index is later than the query's (np.subtract.outer of positions > 0 set to -inf), a decoder mask the encoder-style exercise does not ask for
"""Multi-head attention copied from my GPT notes (NumPy, no framework).

Positions are compared with ``np.subtract.outer``; the heads are split with a
reshape and merged with ``np.concatenate``.
"""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    z = x - x.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    T, S = Q.shape[-2], K.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    # offset[t, s] = s - t ; positive means the key lies in the query's future
    offset = np.subtract.outer(np.arange(S), np.arange(T)).T
    scores = np.where(offset > 0, -np.inf, scores)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) % num_heads ({num_heads}) != 0")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        s = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, s, (d_model, d_model))
        self.W_K = rng.normal(0.0, s, (d_model, d_model))
        self.W_V = rng.normal(0.0, s, (d_model, d_model))
        self.W_O = rng.normal(0.0, s, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        y, w = scaled_dot_product_attention(q, k, v)
        y = self.combine_heads(y) @ self.W_O
        return (y, w) if return_weights else y
