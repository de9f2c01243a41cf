# expect: correct
# -inf entries handled with numpy.ma: they are masked, the row max and sum are
# taken over what is left, and masked places come back as exact zeros.
import numpy as np


def softmax(x):
    m = np.ma.masked_invalid(np.asarray(x, dtype=float))
    shifted = m - m.max(axis=-1, keepdims=True)
    e = np.ma.exp(shifted)
    return np.ma.filled(e / e.sum(axis=-1, keepdims=True), 0.0)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    weights = softmax(np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(d_k))
    return np.einsum("bhts,bhsd->bhtd", weights, V), weights


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
        return np.einsum("bthd->bhtd", x.reshape(*x.shape[:2], self.num_heads, self.d_k))

    def combine_heads(self, x):
        y = np.einsum("bhtd->bthd", x)
        return y.reshape(y.shape[0], y.shape[1], -1)

    def forward(self, Q, K, V, return_weights=False):
        ctx, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q),
                                              self.split_heads(K @ self.W_K),
                                              self.split_heads(V @ self.W_V))
        out = self.combine_heads(ctx) @ self.W_O
        return (out, w) if return_weights else out
