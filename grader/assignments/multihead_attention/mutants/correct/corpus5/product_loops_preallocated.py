# expect: correct
# correct; attention and the head split are itertools.product loops that fill preallocated arrays, softmax uses np.maximum.reduce / np.add.reduce
"""Loop version of multi-head attention, the way I first wrote it for the exam.

No fancy broadcasting in the attention itself: ``itertools.product`` walks over
every leading index (batch, head, ...) and each (T, S) block is computed and
written into an output array that was allocated up front.
"""

import itertools
import math

import numpy as np


def softmax(x):
    x = np.asarray(x)
    # the ufunc reduce spelling of max/sum, keeping the reduced axis for broadcasting
    peak = np.maximum.reduce(x, axis=-1, keepdims=True)
    z = np.exp(x - peak)
    return z / np.add.reduce(z, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    *lead, T, d_k = Q.shape
    S = K.shape[-2]
    dtype = np.result_type(Q, K, V, np.float64)
    out = np.empty((*lead, T, V.shape[-1]), dtype=dtype)
    weights = np.empty((*lead, T, S), dtype=dtype)
    inv_root = 1.0 / math.sqrt(d_k)
    # product() of no ranges yields a single () -> plain 2-D inputs work too
    for idx in itertools.product(*(range(n) for n in lead)):
        scores = (Q[idx] @ K[idx].T) * inv_root      # (T, S)
        weights[idx] = softmax(scores)
        out[idx] = weights[idx] @ V[idx]             # (T, d_k)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"{d_model} features cannot be shared by {num_heads} heads")
        self.d_model, self.num_heads = d_model, num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        sd = 1.0 / np.sqrt(d_model)
        self.W_Q, self.W_K, self.W_V, self.W_O = (
            rng.normal(0.0, sd, (d_model, d_model)) for _ in range(4)
        )

    def split_heads(self, x):
        B, T, _ = x.shape
        H, dk = self.num_heads, self.d_k
        heads = np.empty((B, H, T, dk), dtype=x.dtype)
        for b, h in itertools.product(range(B), range(H)):
            heads[b, h] = x[b, :, h * dk:(h + 1) * dk]
        return heads

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        merged = np.empty((B, T, H * dk), dtype=x.dtype)
        for b, h in itertools.product(range(B), range(H)):
            merged[b, :, h * dk:(h + 1) * dk] = x[b, h]
        return merged

    def forward(self, Q, K, V, return_weights=False):
        heads_q = self.split_heads(Q @ self.W_Q)
        heads_k = self.split_heads(K @ self.W_K)
        heads_v = self.split_heads(V @ self.W_V)
        attended, weights = scaled_dot_product_attention(heads_q, heads_k, heads_v)
        result = self.combine_heads(attended) @ self.W_O
        if return_weights:
            return result, weights
        return result
