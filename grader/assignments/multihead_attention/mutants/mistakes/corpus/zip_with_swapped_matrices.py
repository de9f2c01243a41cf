# expect: mha-wrong-projection
# The matrices are zipped with the inputs in the wrong order: K meets W_V and V meets W_K.
import numpy as np


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    p = np.exp(x - m)
    return p / np.sum(p, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(Q.shape[-1])
    p_attn = softmax(scores)
    return np.matmul(p_attn, V), p_attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by h")
        self.d_k, self.h = d_model // num_heads, num_heads

    def split_heads(self, x):
        return x.reshape(x.shape[0], -1, self.h, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        return x.transpose(0, 2, 1, 3).reshape(x.shape[0], -1, self.h * self.d_k)

    def forward(self, Q, K, V, return_weights=False):
        query, key, value = [self.split_heads(x @ W) for x, W in zip((Q, K, V), (self.W_Q, self.W_V, self.W_K))]
        x, attn = scaled_dot_product_attention(query, key, value)
        out = self.combine_heads(x) @ self.W_O
        return (out, attn) if return_weights else out
