# expect: split-heads-interleaved
# split_heads: reshapes to (B, T, d_k, H) and moves the last axis forward, so head i gets features i, i+H, i+2H, ... instead of the block i*d_k:(i+1)*d_k.
from collections import namedtuple

import numpy as np

Layout = namedtuple("Layout", "batch heads length width")


def softmax(x):
    x = np.asarray(x)
    top = np.max(x, axis=-1, keepdims=True)
    unnorm = np.exp(x - top)
    return unnorm / np.sum(unnorm, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scale = Q.shape[-1] ** -0.5
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    probs = softmax(scores)
    return probs @ V, probs


class MultiHeadAttention:
    _ORDER = ("W_Q", "W_K", "W_V", "W_O")

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model has to be a multiple of num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        # one list, indexed in _ORDER
        self.weights = [rng.normal(0.0, scale, (d_model, d_model)) for _ in self._ORDER]

    def __getattr__(self, name):
        if name in MultiHeadAttention._ORDER:
            return self.__dict__["weights"][MultiHeadAttention._ORDER.index(name)]
        raise AttributeError(name)

    def __setattr__(self, name, value):
        if name in MultiHeadAttention._ORDER:
            self.weights[MultiHeadAttention._ORDER.index(name)] = value
        else:
            super().__setattr__(name, value)

    def _layout(self, x):
        b, t, _ = x.shape
        return Layout(b, self.num_heads, t, self.d_k)

    def split_heads(self, x):
        L = self._layout(x)
        parts = x.reshape(L.batch, L.length, L.width, L.heads)
        return np.moveaxis(parts, -1, 1)                   # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, w = x.shape
        return np.moveaxis(x, 1, 2).reshape(b, t, h * w)   # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        W_Q, W_K, W_V, W_O = self.weights
        heads, probs = scaled_dot_product_attention(
            self.split_heads(Q @ W_Q), self.split_heads(K @ W_K), self.split_heads(V @ W_V))
        out = self.combine_heads(heads) @ W_O
        if return_weights:
            return out, probs
        return out
