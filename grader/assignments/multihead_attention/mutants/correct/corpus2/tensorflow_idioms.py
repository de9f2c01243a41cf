# expect: correct
# Ported from a TensorFlow tutorial: tf.matmul(transpose_b=True), tf.transpose
# with perm, reduce_* helpers and tf.math.sqrt(tf.cast(dk, float32)) spelled out.
import numpy as np


def reduce_max(x, axis=None, keepdims=False):
    return np.max(x, axis=axis, keepdims=keepdims)


def reduce_sum(x, axis=None, keepdims=False):
    return np.sum(x, axis=axis, keepdims=keepdims)


def matmul(a, b, transpose_b=False):
    if transpose_b:
        b = np.transpose(b, list(range(b.ndim - 2)) + [b.ndim - 1, b.ndim - 2])
    return np.matmul(a, b)


def softmax(x):
    logits = x - reduce_max(x, axis=-1, keepdims=True)
    e = np.exp(logits)
    return e / reduce_sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    matmul_qk = matmul(Q, K, transpose_b=True)
    dk = np.float32(K.shape[-1])
    scaled_attention_logits = matmul_qk / np.sqrt(dk)
    attention_weights = softmax(scaled_attention_logits)
    return matmul(attention_weights, V), attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_model = d_model
        self.depth = self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_K = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_V = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_O = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))

    def split_heads(self, x):
        batch_size = x.shape[0]
        x = np.reshape(x, (batch_size, -1, self.num_heads, self.depth))
        return np.transpose(x, axes=[0, 2, 1, 3])

    def combine_heads(self, x):
        batch_size = x.shape[0]
        x = np.transpose(x, axes=[0, 2, 1, 3])
        return np.reshape(x, (batch_size, -1, self.d_model))

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(matmul(Q, self.W_Q))
        k = self.split_heads(matmul(K, self.W_K))
        v = self.split_heads(matmul(V, self.W_V))
        scaled_attention, attention_weights = scaled_dot_product_attention(q, k, v)
        output = matmul(self.combine_heads(scaled_attention), self.W_O)
        if return_weights:
            return output, attention_weights
        return output
