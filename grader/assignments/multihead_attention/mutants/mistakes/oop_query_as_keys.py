# expect: mha-ignores-key-value
# The same mistake as one of the realistic mutants beside it, written in another style.
import numpy as np


def _row_max(x):
    return np.amax(x, axis=x.ndim - 1, keepdims=True)


def softmax(x):
    z = np.array(x, dtype=np.float64, copy=True)
    z -= _row_max(z)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def scaled_dot_product_attention(Q, K, V):
    scores = (Q / np.sqrt(Q.shape[-1])) @ K.transpose(0, 1, 3, 2)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention(object):
    def __init__(self, d_model=8, num_heads=2):
        self.d_model = int(d_model)
        self.num_heads = int(num_heads)
        if self.d_model % self.num_heads:
            raise ArithmeticError("uneven heads")
        self.depth = self.d_model // self.num_heads

    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape((B, T, self.num_heads, self.depth)).swapaxes(1, 2)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.swapaxes(1, 2).reshape((B, T, H * d))

    def _project(self, x, W):
        return np.matmul(x, W)

    def forward(self, Q, K, V, return_weights=False):
        parts = [self.split_heads(self._project(a, W)) for a, W in ((Q, self.W_Q), (Q, self.W_K), (Q, self.W_V))]
        heads, weights = scaled_dot_product_attention(*parts)
        out = self._project(self.combine_heads(heads), self.W_O)
        return (out, weights) if return_weights else out
