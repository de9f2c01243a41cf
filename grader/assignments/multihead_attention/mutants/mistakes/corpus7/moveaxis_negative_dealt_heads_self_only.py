# expect: split-heads-interleaved, mha-ignores-key-value
# split_heads reshapes to (B, T, d_k, H) and moves the last axis forward, dealing features to heads round-robin; forward projects the query input x = Q for the keys and values too, ignoring K and V.
import numpy as np


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ np.moveaxis(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = softmax(scores)
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model % num_heads must be 0")
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
        # (B, T, D) -> (B, T, d_k, H) -> heads to the front of the last three axes
        y = x.reshape(*x.shape[:-1], self.d_k, self.num_heads)
        return np.moveaxis(y, -1, -3)

    def combine_heads(self, x):
        # (B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, D)
        y = np.moveaxis(x, -3, -2)
        return y.reshape(*y.shape[:-2], -1)

    def forward(self, Q, K, V, return_weights=False):
        x = Q
        q, k, v = (self.split_heads(x @ W) for W in (self.W_Q, self.W_K, self.W_V))
        heads, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, w) if return_weights else out
