# expect: attention-softmax-wrong-axis, mha-adds-residual
# attention normalises with _normalise(..., axis=2), taking "the key axis of K" but on (B, H, T, S) scores that is the query axis; forward adds the query input Q to the output as a residual.
import functools
import math
import operator

import numpy as np

mm = operator.matmul
last_two_swapped = functools.partial(np.swapaxes, axis1=-1, axis2=-2)


def _normalise(x, axis):
    x = np.asarray(x)
    top = np.max(x, axis=axis, keepdims=True)
    ex = np.exp(x - top)
    return ex / np.sum(ex, axis=axis, keepdims=True)


softmax = functools.partial(_normalise, axis=-1)
softmax.__doc__ = "Stable softmax over the last axis."


def scaled_dot_product_attention(Q, K, V):
    scale = 1.0 / math.sqrt(Q.shape[-1])
    scores = mm(Q, last_two_swapped(K)) * scale   # (B, H, T, S)
    # keys sit on axis 2 of K (B, H, S, d_k) -> normalise over that axis
    weights = _normalise(scores, axis=2)
    return mm(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
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
        b, t, _ = x.shape
        return np.transpose(np.reshape(x, (b, t, self.num_heads, self.d_k)), (0, 2, 1, 3))

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.reshape(np.transpose(x, (0, 2, 1, 3)), (b, t, h * d))

    def _project(self, x, name):
        return mm(x, getattr(self, name))

    def forward(self, Q, K, V, return_weights=False):
        q, k, v = map(self._project, (Q, K, V), ("W_Q", "W_K", "W_V"))
        heads, weights = scaled_dot_product_attention(*map(self.split_heads, (q, k, v)))
        out = self._project(self.combine_heads(heads), "W_O")
        out = operator.add(out, Q)  # residual
        if return_weights:
            return out, weights
        return out
