# expect: attention-mutates-input, mha-ignores-key-value
# inside the (batch, head) loop the query block Q[idx] is a view and is scaled with *= (changing the caller's Q); forward treats the layer as self-attention and projects Q for keys and values too
"""Self-attention-first implementation with ``itertools.product`` loops.

Written for an encoder, so ``forward`` keeps the three-argument signature but
the loop body is the classic one-matrix-at-a-time attention.
"""

import itertools
import math

import numpy as np


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    *lead, T, d_k = Q.shape
    out = np.empty((*lead, T, V.shape[-1]))
    weights = np.empty((*lead, T, K.shape[-2]))
    for idx in itertools.product(*map(range, lead)):
        q = Q[idx]
        q *= 1.0 / math.sqrt(d_k)        # fold the temperature into the queries
        weights[idx] = softmax(q @ K[idx].T)
        out[idx] = weights[idx] @ V[idx]
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
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
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        x = Q    # encoder: the sequence attends to itself
        q = self.split_heads(x @ self.W_Q)
        k = self.split_heads(x @ self.W_K)
        v = self.split_heads(x @ self.W_V)
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, weights
        return out
