# expect: correct
# correct; every per-matrix step is an np.vectorize gufunc with a core signature, the row max comes from np.partition and the row sum from a cumsum's last entry
"""Multi-head attention written as a handful of generalised ufuncs.

Every operation is defined once for a single row or a single (T, d) matrix and
then lifted over any number of leading (batch, head) axes with
``np.vectorize(..., signature=...)``.  Slow, but the per-matrix code reads like
the formulas on the slide.
"""

import numpy as np


def _softmax_row(row):
    # np.partition puts the largest entry in the last slot; that is all we need
    peak = np.partition(row, -1)[-1]
    e = np.exp(row - peak)
    # last entry of the running sum is the total
    return e / np.cumsum(e)[-1:]


_softmax_rows = np.vectorize(_softmax_row, signature="(n)->(n)")


def softmax(x):
    """Stable softmax over the last axis of an array of any rank."""
    return _softmax_rows(np.asarray(x))


# one (T, d) query block against one (S, d) key block
_scores = np.vectorize(lambda q, k: q @ k.T, signature="(t,d),(s,d)->(t,s)")
# one (T, S) weight matrix against one (S, e) value block
_mix = np.vectorize(lambda w, v: w @ v, signature="(t,s),(s,e)->(t,e)")


def scaled_dot_product_attention(Q, K, V):
    """Q (..., T, d_k), K and V (..., S, d_k) -> (out (..., T, d_k), weights (..., T, S))."""
    d_k = Q.shape[-1]
    logits = _scores(Q, K) / np.sqrt(d_k)
    weights = softmax(logits)
    return _mix(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads has to divide d_model evenly")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        # (B, T, D) -> (B, H, T, d_k): head h takes its own contiguous slice
        w = self.d_k
        return np.stack([x[..., h * w:(h + 1) * w] for h in range(self.num_heads)], axis=1)

    def combine_heads(self, x):
        # (B, H, T, d_k) -> (B, T, D): glue the slices back side by side
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        return (out, weights) if return_weights else out
