# expect: split-heads-hardcoded-shape, softmax-unstable
# Two mistakes: split_heads reshapes to (1, -1, H, d_k), assuming a batch of one sentence, so a larger batch is folded into one long sequence; and softmax exponentiates the raw logits.
"""Multi-head attention grown out of a notebook that encodes one sentence at a time.

The cells were written for a single (1, T, D) sentence and then collected into a
module; the computations are written out step by step with short names.
"""

import numpy as np


def softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    dk = Q.shape[-1]
    s = Q @ K.swapaxes(-2, -1)  # (B, H, T, S)
    s = s / np.sqrt(dk)
    a = softmax(s)
    o = a @ V  # (B, H, T, d_k)
    return o, a


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} features cannot be shared by {num_heads} heads")
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
        h, dk = self.num_heads, self.d_k
        x = x.reshape(1, -1, h, dk)  # (1, T, H, d_k)
        x = x.transpose(0, 2, 1, 3)  # (1, H, T, d_k)
        return x

    def combine_heads(self, x):
        b, h, t, dk = x.shape
        x = x.transpose(0, 2, 1, 3)  # (B, T, H, d_k)
        return x.reshape(b, t, h * dk)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        o, a = scaled_dot_product_attention(q, k, v)
        y = self.combine_heads(o) @ self.W_O
        if return_weights:
            return y, a
        return y
