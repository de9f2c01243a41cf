# expect: softmax-no-keepdims
# TensorFlow-style reduce helpers whose keepdims defaults to False: the max
# keeps its axis, the sum does not.
import numpy as np


def reduce_max(x, axis=None, keepdims=False):
    return np.max(x, axis=axis, keepdims=keepdims)


def reduce_sum(x, axis=None, keepdims=False):
    return np.sum(x, axis=axis, keepdims=keepdims)


def softmax(x):
    e = np.exp(x - reduce_max(x, axis=-1, keepdims=True))
    return e / reduce_sum(e, axis=-1)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_K = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_V = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_O = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        return (out, w) if return_weights else out

