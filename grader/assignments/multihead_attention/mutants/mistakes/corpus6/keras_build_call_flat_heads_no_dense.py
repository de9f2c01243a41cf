# expect: split-heads-no-transpose, mha-no-output-projection
# split_heads reshapes (B, T, D) straight to (B, H, T, d_k) with no transpose, scrambling positions across heads; call() returns the combined heads without multiplying by W_O.
"""Keras-flavoured MultiHeadAttention (build/call), NumPy backend."""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - np.amax(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    dk = np.float64(Q.shape[-1])
    matmul_qk = np.matmul(Q, np.swapaxes(K, -1, -2))
    scaled_attention_logits = matmul_qk / np.sqrt(dk)
    attention_weights = softmax(scaled_attention_logits)
    output = np.matmul(attention_weights, V)
    return output, attention_weights


class Layer:
    def __init__(self, **kwargs):
        self.built = False
        self.trainable = kwargs.get("trainable", True)

    def build(self, input_shape=None):
        self.built = True

    def __call__(self, *inputs, **kwargs):
        if not self.built:
            self.build(inputs[0].shape if inputs else None)
        return self.call(*inputs, **kwargs)


class MultiHeadAttention(Layer):
    def __init__(self, d_model=8, num_heads=2, **kwargs):
        super().__init__(**kwargs)
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.depth = self.d_k
        self._init_weights()

    def _init_weights(self):
        d_model = self.d_model
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))  # wq
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))  # wk
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))  # wv
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))  # dense

    def build(self, input_shape=None):
        # weights already exist (the exercise wants them right after __init__)
        super().build(input_shape)

    def split_heads(self, x):
        """Split the last dimension into (num_heads, depth) -> (batch, heads, seq, depth)."""
        batch_size = x.shape[0]
        return np.reshape(x, (batch_size, self.num_heads, -1, self.depth))

    def combine_heads(self, x):
        batch_size, _, seq_len, _ = x.shape
        x = np.transpose(x, (0, 2, 1, 3))  # (batch, seq, heads, depth)
        return np.reshape(x, (batch_size, seq_len, self.d_model))

    def call(self, q, k, v, training=False, return_attention_scores=False):
        q = self.split_heads(np.matmul(q, self.W_Q))
        k = self.split_heads(np.matmul(k, self.W_K))
        v = self.split_heads(np.matmul(v, self.W_V))
        scaled_attention, attention_weights = scaled_dot_product_attention(q, k, v)
        output = self.combine_heads(scaled_attention)  # (batch, seq_q, d_model)
        if return_attention_scores:
            return output, attention_weights
        return output

    def forward(self, Q, K, V, return_weights=False):
        return self(Q, K, V, return_attention_scores=return_weights)
