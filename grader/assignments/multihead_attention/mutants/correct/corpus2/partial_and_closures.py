# expect: correct
# A functional student: functools.partial fixes the axis, closures build the
# projections, and the class only wires them together.
import functools

import numpy as np


def _normalise(x, *, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


softmax = functools.partial(_normalise, axis=-1)


def _linear(weight):
    def apply(x):
        return np.matmul(x, weight)
    return apply


def scaled_dot_product_attention(Q, K, V):
    scale = functools.reduce(lambda acc, _: acc, range(0), 1.0 / np.sqrt(K.shape[-1]))
    weights = softmax(np.matmul(Q, np.swapaxes(K, -1, -2)) * scale)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        make = functools.partial(rng.normal, 0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_Q, self.W_K, self.W_V, self.W_O = make(), make(), make(), make()

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * k)

    def forward(self, Q, K, V, return_weights=False):
        pipeline = [(_linear(self.W_Q), Q), (_linear(self.W_K), K), (_linear(self.W_V), V)]
        q, k, v = (self.split_heads(f(x)) for f, x in pipeline)
        context, weights = scaled_dot_product_attention(q, k, v)
        out = _linear(self.W_O)(self.combine_heads(context))
        if return_weights:
            return out, weights
        return out
