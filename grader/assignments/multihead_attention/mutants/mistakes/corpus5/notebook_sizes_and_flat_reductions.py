# expect: softmax-no-keepdims, split-heads-hardcoded-shape
# softmax reduces with np.maximum.reduce / np.add.reduce without keepdims (the (..., ) results broadcast against the wrong axis); split_heads reshapes with the notebook's BATCH=2, SEQ_LEN=5 constants instead of x's shape
"""Notebook-exported multi-head attention.

The notebook's toy sizes are module constants at the top; softmax uses the
ufunc ``reduce`` methods directly.
"""

import numpy as np

# toy sizes from the notebook cell above
BATCH = 2
SEQ_LEN = 5


def softmax(x):
    x = np.asarray(x)
    top = np.maximum.reduce(x, axis=-1)
    e = np.exp(x - top)
    return e / np.add.reduce(e, axis=-1)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    p = softmax(scores)
    return p @ V, p


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must split evenly over the heads")
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
        x = x.reshape(BATCH, SEQ_LEN, self.num_heads, self.d_k)
        return x.transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        out, p = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(out) @ self.W_O
        if return_weights:
            return out, p
        return out
