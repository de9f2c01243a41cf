# expect: mha-no-output-projection
# forward returns the concatenated heads (output_concat) directly; W_O is created in __init__ but never applied.
"""NumPy version of d2l.ai's MultiHeadAttention (no masking, no dropout)."""
import math

import numpy as np


def softmax(X):
    X_max = X.max(axis=-1, keepdims=True)
    X_exp = np.exp(X - X_max)
    partition = X_exp.sum(axis=-1, keepdims=True)
    return X_exp / partition  # The broadcasting mechanism is applied here


def scaled_dot_product_attention(Q, K, V):
    d = Q.shape[-1]
    # Swap the last two dimensions of keys with keys.swapaxes(-1, -2)
    scores = Q @ K.swapaxes(-1, -2) / math.sqrt(d)
    attention_weights = softmax(scores)
    return attention_weights @ V, attention_weights


def transpose_qkv(X, num_heads):
    """Transposition for parallel computation of multiple attention heads."""
    # Shape of input X: (batch_size, no. of queries or key-value pairs,
    # num_hiddens). Shape of output X: (batch_size, no. of queries or
    # key-value pairs, num_heads, num_hiddens / num_heads)
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    # Shape of output X: (batch_size, num_heads, no. of queries or key-value
    # pairs, num_hiddens / num_heads)
    return X.transpose(0, 2, 1, 3)


def transpose_output(X, num_heads):
    """Reverse the operation of transpose_qkv."""
    X = X.transpose(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


class MultiHeadAttention:
    """Multi-head attention."""

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_hiddens must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_model = d_model
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / math.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        return transpose_qkv(x, self.num_heads)

    def combine_heads(self, x):
        return transpose_output(x, self.num_heads)

    def forward(self, queries, keys, values, return_weights=False):
        queries = self.split_heads(queries @ self.W_Q)
        keys = self.split_heads(keys @ self.W_K)
        values = self.split_heads(values @ self.W_V)
        output, self.attention_weights = scaled_dot_product_attention(queries, keys, values)
        # Shape of output_concat: (batch_size, no. of queries, num_hiddens)
        output_concat = self.combine_heads(output)
        if return_weights:
            return output_concat, self.attention_weights
        return output_concat
