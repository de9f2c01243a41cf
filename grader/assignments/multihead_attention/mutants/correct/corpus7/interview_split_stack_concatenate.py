# expect: correct
# Compact interview-style answer: heads cut with np.split and stacked, merged back with np.concatenate, divmod for the size check.
import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, -1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1]))
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.d_k, rem = divmod(d_model, num_heads)
        if rem:
            raise ValueError("num_heads must divide d_model")
        self.d_model, self.num_heads = d_model, num_heads
        rng, s = np.random.default_rng(0), 1.0 / np.sqrt(d_model)
        self.W_Q, self.W_K, self.W_V, self.W_O = (rng.normal(0.0, s, (d_model, d_model)) for _ in range(4))

    def split_heads(self, x):
        return np.stack(np.split(x, self.num_heads, axis=-1), axis=1)

    def combine_heads(self, x):
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q, k, v = (self.split_heads(a @ w) for a, w in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V)))
        o, w = scaled_dot_product_attention(q, k, v)
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
