# expect: mha-no-output-projection
# A tutorial's version that ends at the concatenated heads: W_O is never used.
import numpy as np


def softmax(x):
    x = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, K.transpose(0, 1, 3, 2)) / np.sqrt(Q.shape[-1])
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.depth = num_heads, d_model // num_heads

    def split_heads(self, x):
        return x.reshape(x.shape[0], -1, self.num_heads, self.depth).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        return x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)

    def forward(self, Q, K, V, return_weights=False):
        q_heads = self.split_heads(Q @ self.W_Q)
        k_heads = self.split_heads(K @ self.W_K)
        v_heads = self.split_heads(V @ self.W_V)
        context, weights = scaled_dot_product_attention(q_heads, k_heads, v_heads)
        context = self.combine_heads(context)
        return (context, weights) if return_weights else context
