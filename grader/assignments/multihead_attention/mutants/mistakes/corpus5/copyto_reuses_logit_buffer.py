# expect: softmax-mutates-input
# softmax writes the shifted logits back into the caller's array with np.copyto (to "save an allocation"), so the input is overwritten
"""Interview answer: memory-conscious multi-head attention.

The candidate tried to avoid temporaries: the softmax reuses its input buffer
for the shifted logits.  The rest is the textbook reshape/transpose version,
with the row max taken by ``np.maximum.reduce``.
"""

import numpy as np


def softmax(x):
    peak = np.maximum.reduce(x, axis=-1, keepdims=True)
    # reuse x's memory for x - max instead of allocating another array
    np.copyto(x, x - peak)
    ex = np.exp(x)
    return ex / np.add.reduce(ex, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = (Q @ K.swapaxes(-1, -2)) / np.sqrt(d_k)
    probs = softmax(scores)
    return probs @ V, probs


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("number of heads must divide d_model")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q, self.W_K, self.W_V, self.W_O = rng.normal(
            0.0, 1.0 / np.sqrt(d_model), (4, d_model, d_model))

    def split_heads(self, x):
        n, t, _ = x.shape
        return x.reshape(n, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        n, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(n, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        heads, probs = scaled_dot_product_attention(
            self.split_heads(Q @ self.W_Q),
            self.split_heads(K @ self.W_K),
            self.split_heads(V @ self.W_V),
        )
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, probs
        return out
