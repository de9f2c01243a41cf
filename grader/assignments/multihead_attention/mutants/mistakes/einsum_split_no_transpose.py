# expect: split-heads-no-transpose
# The same mistake as one of the realistic mutants beside it, written in another style.
import numpy as np


def softmax(x):
    top = x.max(axis=-1, keepdims=True)
    log_total = top + np.log(np.exp(x - top).sum(axis=-1, keepdims=True))
    return np.exp(x - log_total)


def scaled_dot_product_attention(Q, K, V):
    scores = np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(Q.shape[-1])
    weights = softmax(scores)
    return np.einsum("bhts,bhsd->bhtd", weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        assert d_model % num_heads == 0, "heads must divide d_model"
        self.h, self.dk = num_heads, d_model // num_heads
        self.W_Q = np.eye(d_model)
        self.W_K = np.eye(d_model)
        self.W_V = np.eye(d_model)
        self.W_O = np.eye(d_model)

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, self.h, t, self.dk)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.einsum("bhtd->bthd", x).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.einsum("btd,de->bte", Q, self.W_Q))
        k = self.split_heads(np.einsum("btd,de->bte", K, self.W_K))
        v = self.split_heads(np.einsum("btd,de->bte", V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.einsum("bte,ef->btf", self.combine_heads(heads), self.W_O)
        return (out, weights) if return_weights else out
