# expect: softmax-no-keepdims
# softmax takes the row max with keepdims but the row sum without it, so the division broadcasts the sums along the wrong axis.
import numpy as np


def _check_rank(a, rank, name):
    assert a.ndim == rank, f"{name}: expected rank {rank}, got shape {a.shape}"


def softmax(x):
    x = np.asarray(x, dtype=float)
    assert x.ndim >= 1, "softmax needs at least one axis"
    shifted = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=-1)
    assert np.all(total >= 1.0), "the max entry alone contributes exp(0) = 1"
    return e / total


def scaled_dot_product_attention(Q, K, V):
    for a, n in ((Q, "Q"), (K, "K"), (V, "V")):
        _check_rank(a, 4, n)
    assert Q.shape[:2] == K.shape[:2] == V.shape[:2], "batch/head axes disagree"
    assert Q.shape[-1] == K.shape[-1], "queries and keys need the same width"
    assert K.shape[2] == V.shape[2], "keys and values need the same length"
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    weights = softmax(scores)
    assert weights.shape == scores.shape
    out = weights @ V
    assert out.shape == Q.shape[:3] + (V.shape[-1],)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if num_heads < 1 or d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} not divisible by num_heads={num_heads}")
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
        _check_rank(x, 3, "x")
        B, T, D = x.shape
        assert D == self.d_model, f"feature axis is {D}, layer expects {self.d_model}"
        out = x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)
        assert out.shape == (B, self.num_heads, T, self.d_k)
        return out

    def combine_heads(self, x):
        _check_rank(x, 4, "x")
        B, H, T, d_k = x.shape
        assert H * d_k == self.d_model
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        _check_rank(Q, 3, "Q")
        _check_rank(K, 3, "K")
        _check_rank(V, 3, "V")
        assert K.shape[:2] == V.shape[:2], "K and V must have the same batch and length"
        assert Q.shape[0] == K.shape[0], "batch sizes differ"
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        assert out.shape == Q.shape
        if return_weights:
            return out, weights
        return out
