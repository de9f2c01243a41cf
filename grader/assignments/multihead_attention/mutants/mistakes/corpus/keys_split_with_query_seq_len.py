# expect: mha-kv-uses-query-length
# One seq_len read from the queries serves every reshape, so keys and values of
# another length are cut wrongly (or fail to reshape).
import numpy as np


def softmax(x, axis=-1):
    e_x = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e_x / np.sum(e_x, axis=axis, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    attn_score = (Q @ K.transpose(0, 1, 3, 2)) / np.sqrt(d_k)
    attn_prob = softmax(attn_score)
    return attn_prob @ V, attn_prob


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, _, t, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, -1)

    def forward(self, Q, K, V, return_weights=False):
        batch_size, seq_len, d_model = Q.shape
        Q_split = (Q @ self.W_Q).reshape(batch_size, seq_len, self.num_heads, self.d_k).transpose(0, 2, 1, 3)
        K_split = (K @ self.W_K).reshape(batch_size, seq_len, self.num_heads, self.d_k).transpose(0, 2, 1, 3)
        V_split = (V @ self.W_V).reshape(batch_size, seq_len, self.num_heads, self.d_k).transpose(0, 2, 1, 3)
        context, attn_prob = scaled_dot_product_attention(Q_split, K_split, V_split)
        output = self.combine_heads(context) @ self.W_O
        return (output, attn_prob) if return_weights else output
