# expect: correct
# Keras-style port (Layer base with build()/call(), forward() delegating to __call__), softmax masks -inf logits with np.where; no known mistakes.
"""Multi-head attention written the way I'd write a Keras layer.

I kept the Keras structure (a tiny ``Layer`` base class, ``build`` that runs on
the first call, ``call`` doing the work) because that is how I learned it, and
``forward`` just goes through ``__call__`` so the exercise API still works.

Shapes: B batch, H heads, T query length, S key length, D model width,
d_k = D // H.
"""

import numpy as np


def softmax(x):
    """Stable softmax over the last axis; -inf logits get probability 0."""
    x = np.asarray(x)
    finite = np.isfinite(x)
    # row max over the finite logits only (every row has at least one)
    row_max = np.max(np.where(finite, x, -np.inf), axis=-1, keepdims=True)
    shifted = np.where(finite, x - row_max, -np.inf)
    unnorm = np.where(finite, np.exp(shifted), 0.0)
    return unnorm / np.sum(unnorm, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    """softmax(Q K^T / sqrt(d_k)) V for (B, H, T, d_k) / (B, H, S, d_k) inputs."""
    depth = Q.shape[-1]
    logits = np.matmul(Q, np.swapaxes(K, -2, -1))  # (B, H, T, S)
    logits = logits / np.sqrt(depth)
    attention_scores = softmax(logits)
    context = np.matmul(attention_scores, V)  # (B, H, T, d_k)
    return context, attention_scores


class Layer:
    """Bare-bones stand-in for keras.layers.Layer."""

    def __init__(self, name=None):
        self.name = name or type(self).__name__.lower()
        self.built = False

    def build(self, input_shape):
        self.built = True

    def __call__(self, *args, **kwargs):
        if not self.built:
            self.build(np.shape(args[0]))
        return self.call(*args, **kwargs)

    def call(self, *args, **kwargs):
        raise NotImplementedError


class MultiHeadAttention(Layer):
    """Keras-like multi-head attention with four (D, D) kernels applied as x @ W."""

    def __init__(self, d_model=8, num_heads=2, name=None):
        super().__init__(name=name)
        if d_model % num_heads != 0:
            raise ValueError(
                "key_dim mismatch: d_model (%d) must be a multiple of num_heads (%d)"
                % (d_model, num_heads)
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def build(self, input_shape):
        if input_shape and input_shape[-1] != self.d_model:
            raise ValueError(
                "expected last dimension %d, got %r" % (self.d_model, tuple(input_shape))
            )
        super().build(input_shape)

    def split_heads(self, x):
        """(B, T, D) -> (B, H, T, d_k)"""
        batch_size, seq_len = np.shape(x)[0], np.shape(x)[1]
        x = np.reshape(x, (batch_size, seq_len, self.num_heads, self.d_k))
        return np.transpose(x, (0, 2, 1, 3))

    def combine_heads(self, x):
        """(B, H, T, d_k) -> (B, T, D)"""
        batch_size, num_heads, seq_len, depth = np.shape(x)
        x = np.transpose(x, (0, 2, 1, 3))
        return np.reshape(x, (batch_size, seq_len, num_heads * depth))

    def call(self, query, key, value, return_attention_scores=False):
        q = self.split_heads(np.matmul(query, self.W_Q))
        k = self.split_heads(np.matmul(key, self.W_K))
        v = self.split_heads(np.matmul(value, self.W_V))
        context, scores = scaled_dot_product_attention(q, k, v)
        output = np.matmul(self.combine_heads(context), self.W_O)
        if return_attention_scores:
            return output, scores
        return output

    def forward(self, Q, K, V, return_weights=False):
        return self(Q, K, V, return_attention_scores=return_weights)
