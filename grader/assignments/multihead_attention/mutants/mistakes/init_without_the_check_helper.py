# expect: mha-no-divisibility-check
# The check helper exists but is never called.
import numpy as np


class _Ops:
    @staticmethod
    def softmax(x):
        z = x - x.max(axis=-1, keepdims=True)
        z = np.exp(z)
        return z / z.sum(axis=-1, keepdims=True)


def softmax(x):
    return _Ops.softmax(x)


def scaled_dot_product_attention(Q, K, V):
    scale = Q.shape[-1] ** -0.5
    weights = softmax(np.einsum("bhqd,bhkd->bhqk", Q * scale, K))
    return np.einsum("bhqk,bhkd->bhqd", weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
                self.d_model, self.num_heads = d_model, num_heads

    @staticmethod
    def _check(d_model, num_heads):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")

    def _project(self, x, W):
        return np.tensordot(x, W, axes=([2], [0]))

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, -1).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, _, t, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, -1)

    def _attend(self, Q, K, V):
        q, k, v = (self.split_heads(self._project(x, W)) for x, W in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V)))
        return scaled_dot_product_attention(q, k, v)

    def forward(self, Q, K, V, return_weights=False):
        heads, weights = self._attend(Q, K, V)
        out = self._project(self.combine_heads(heads), self.W_O)
        return (out, weights) if return_weights else out
