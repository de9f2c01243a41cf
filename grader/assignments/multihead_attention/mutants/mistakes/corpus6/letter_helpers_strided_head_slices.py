# expect: split-heads-interleaved
# split_heads builds head i from the strided slice x[..., i::H], dealing features to the heads round-robin instead of giving head i the contiguous block i*d_k:(i+1)*d_k.
import numpy as np


def r(a):
    return np.max(a, axis=-1, keepdims=True)


def s(a):
    return np.sum(a, axis=-1, keepdims=True)


def t(a):
    return np.swapaxes(a, -1, -2)


def softmax(x):
    x = np.asarray(x)
    z = np.exp(x - r(x))
    return z / s(z)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ t(K) / np.sqrt(Q.shape[-1]))
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("bad num_heads")
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
        # (B, T, D) -> H pieces of d_k features each -> (B, H, T, d_k)
        h = self.num_heads
        return np.stack([x[..., i::h] for i in range(h)], axis=1)

    def combine_heads(self, x):
        # heads side by side again: (B, T, d_k) per head, concatenated on features
        return np.concatenate(list(np.swapaxes(x, 0, 1)), axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q, k, v = (self.split_heads(a @ W) for a, W in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V)))
        o, w = scaled_dot_product_attention(q, k, v)
        y = self.combine_heads(o) @ self.W_O
        if return_weights:
            return y, w
        return y
