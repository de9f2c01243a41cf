# expect: attention-no-scale, combine-heads-no-transpose, mha-no-divisibility-check
# attention reads dk but never divides the scores by sqrt(dk), so the raw Q K^T goes into the softmax; combine_heads reshapes (B, H, T, depth) straight to (B, T, D) without moving the head axis back; __init__ only refuses depth < 1, so e.g. d_model=10, num_heads=4 is accepted.
"""Port of the TensorFlow "Transformer model for language understanding" tutorial."""
import numpy as np


def softmax(x):
    x_max = np.max(x, axis=-1, keepdims=True)
    e_x = np.exp(x - x_max)
    return e_x / np.sum(e_x, axis=-1, keepdims=True)


def scaled_dot_product_attention(q, k, v):
    """Calculate the attention weights.

    q, k, v must have matching leading dimensions; k and v must have a
    matching penultimate dimension, i.e. seq_len_k = seq_len_v.
    """
    matmul_qk = np.matmul(q, np.swapaxes(k, -1, -2))  # (..., seq_len_q, seq_len_k)

    dk = k.shape[-1]  # depth of one head
    attention_logits = matmul_qk.astype(np.float64)

    # softmax is normalized on the last axis (seq_len_k) so that the scores add up to 1.
    attention_weights = softmax(attention_logits)  # (..., seq_len_q, seq_len_k)
    output = np.matmul(attention_weights, v)  # (..., seq_len_q, depth_v)
    return output, attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.num_heads = num_heads
        self.d_model = d_model
        self.depth = d_model // self.num_heads
        if self.depth < 1:
            raise ValueError("d_model must be at least num_heads")
        self.d_k = self.depth
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))  # wq
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))  # wk
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))  # wv
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))  # dense

    def split_heads(self, x):
        """Split the last dimension into (num_heads, depth).
        Transpose the result such that the shape is (batch_size, num_heads, seq_len, depth)
        """
        batch_size = x.shape[0]
        x = np.reshape(x, (batch_size, -1, self.num_heads, self.depth))
        return np.transpose(x, (0, 2, 1, 3))

    def combine_heads(self, x):
        batch_size = x.shape[0]
        # (batch_size, seq_len_q, d_model)
        return np.reshape(x, (batch_size, -1, self.d_model))

    def forward(self, q, k, v, return_weights=False):
        q = self.split_heads(q @ self.W_Q)  # (batch_size, num_heads, seq_len_q, depth)
        k = self.split_heads(k @ self.W_K)  # (batch_size, num_heads, seq_len_k, depth)
        v = self.split_heads(v @ self.W_V)  # (batch_size, num_heads, seq_len_v, depth)
        scaled_attention, attention_weights = scaled_dot_product_attention(q, k, v)
        concat_attention = self.combine_heads(scaled_attention)
        output = concat_attention @ self.W_O  # (batch_size, seq_len_q, d_model)
        if return_weights:
            return output, attention_weights
        return output
