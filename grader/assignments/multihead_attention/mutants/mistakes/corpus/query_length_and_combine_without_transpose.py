# expect: mha-kv-uses-query-length, combine-heads-no-transpose
# One shape read from Q reshapes everything, and combine_heads reshapes
# (B, H, T, d_k) to (B, T, D) without moving the heads back.
import numpy as np


def softmax(x, axis=-1):
    e_x = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e_x / np.sum(e_x, axis=axis, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    attn_score = (Q @ K.transpose(0, 1, 3, 2)) / np.sqrt(Q.shape[-1])
    attn_prob = softmax(attn_score)
    return attn_prob @ V, attn_prob


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return x.reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        batch_size, seq_len, d_model = Q.shape
        split = lambda x: x.reshape(batch_size, seq_len, self.num_heads, self.d_k).transpose(0, 2, 1, 3)
        context, attn_prob = scaled_dot_product_attention(split(Q @ self.W_Q), split(K @ self.W_K), split(V @ self.W_V))
        output = self.combine_heads(context) @ self.W_O
        return (output, attn_prob) if return_weights else output
