# expect: attention-causal-mask
# scaled_dot_product_attention builds a GPT-style np.triu mask and sets every key after the query's position to -inf, so an encoder query cannot see later keys.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    T, S = Q.shape[-2], K.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    # don't let position i attend to j > i
    future = np.triu(np.ones((T, S), dtype=bool), k=1)
    scores = np.where(future, -np.inf, scores)
    weights = softmax(scores)
    return weights @ V, weights


def make_projection(layer, name):
    def project(x):
        return x @ getattr(layer, name)
    return project


def make_forward(layer):
    proj = {n: make_projection(layer, n) for n in ("W_Q", "W_K", "W_V", "W_O")}

    def forward(Q, K, V, return_weights=False):
        q = layer.split_heads(proj["W_Q"](Q))
        k = layer.split_heads(proj["W_K"](K))
        v = layer.split_heads(proj["W_V"](V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = proj["W_O"](layer.combine_heads(heads))
        return (out, weights) if return_weights else out

    return forward


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))
        self._forward = make_forward(self)

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        return self._forward(Q, K, V, return_weights)
