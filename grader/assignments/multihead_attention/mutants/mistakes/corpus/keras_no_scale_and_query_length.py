# expect: attention-no-scale, mha-kv-uses-query-length
# Two mistakes: the logits are never scaled, and the keys and values are
# reshaped with the queries' length.
import numpy as np


def softmax(x):
    exps = np.exp(x - np.amax(x, axis=-1, keepdims=True))
    return exps / np.sum(exps, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scaled_attention_logits = np.matmul(Q, np.transpose(K, axes=[0, 1, 3, 2]))
    attention_weights = softmax(scaled_attention_logits)
    return np.matmul(attention_weights, V), attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.num_heads, self.depth = num_heads, d_model // num_heads

    def split_heads(self, x):
        return np.transpose(np.reshape(x, (x.shape[0], -1, self.num_heads, self.depth)), axes=[0, 2, 1, 3])

    def combine_heads(self, x):
        x = np.transpose(x, axes=[0, 2, 1, 3])
        return np.reshape(x, (x.shape[0], x.shape[1], -1))

    def forward(self, Q, K, V, return_weights=False):
        batch_size, seq_len_q, _ = Q.shape
        q = self.split_heads(np.dot(Q, self.W_Q))
        k = np.dot(K, self.W_K).reshape(batch_size, seq_len_q, self.num_heads, self.depth).transpose(0, 2, 1, 3)
        v = np.dot(V, self.W_V).reshape(batch_size, seq_len_q, self.num_heads, self.depth).transpose(0, 2, 1, 3)
        out, w = scaled_dot_product_attention(q, k, v)
        out = np.dot(self.combine_heads(out), self.W_O)
        return (out, w) if return_weights else out
