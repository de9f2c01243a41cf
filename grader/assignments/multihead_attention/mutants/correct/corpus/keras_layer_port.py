# expect: correct
# A Keras layer rewritten in NumPy: perm lists for the transposes, matmul with
# the keys' last two axes swapped (transpose_b), the depth cast to float first.
import numpy as np


def softmax(x):
    x_max = np.amax(x, axis=-1, keepdims=True)
    exps = np.exp(x - x_max)
    return exps / np.sum(exps, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    matmul_qk = np.matmul(Q, np.transpose(K, axes=[0, 1, 3, 2]))  # (..., seq_len_q, seq_len_k)
    dk = np.float64(K.shape[-1])
    scaled_attention_logits = matmul_qk / np.sqrt(dk)
    attention_weights = softmax(scaled_attention_logits)
    output = np.matmul(attention_weights, V)  # (..., seq_len_q, depth_v)
    return output, attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.num_heads = num_heads
        self.d_model = d_model
        if d_model % self.num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.depth = d_model // self.num_heads

    def split_heads(self, x):
        """Split the last dimension into (num_heads, depth) and transpose to (batch, heads, seq, depth)."""
        batch_size = x.shape[0]
        x = np.reshape(x, (batch_size, -1, self.num_heads, self.depth))
        return np.transpose(x, axes=[0, 2, 1, 3])

    def combine_heads(self, x):
        batch_size = x.shape[0]
        x = np.transpose(x, axes=[0, 2, 1, 3])  # (batch_size, seq_len_q, num_heads, depth)
        return np.reshape(x, (batch_size, -1, self.d_model))

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.dot(Q, self.W_Q))
        k = self.split_heads(np.dot(K, self.W_K))
        v = self.split_heads(np.dot(V, self.W_V))
        scaled_attention, attention_weights = scaled_dot_product_attention(q, k, v)
        concat_attention = self.combine_heads(scaled_attention)
        output = np.dot(concat_attention, self.W_O)
        if return_weights:
            return output, attention_weights
        return output
