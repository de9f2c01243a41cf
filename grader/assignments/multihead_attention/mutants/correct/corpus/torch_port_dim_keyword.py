# expect: correct
# A PyTorch module translated line by line: softmax takes dim=-1 like
# Tensor.softmax, .transpose(1, 2) written as swapaxes, .view as reshape.
import math

import numpy as np


def softmax(x, dim=-1):
    x_max = np.max(x, axis=dim, keepdims=True)
    unnormalized = np.exp(x - x_max)
    return unnormalized / np.sum(unnormalized, axis=dim, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, K.swapaxes(-2, -1)) / math.sqrt(Q.shape[-1])
    p_attn = softmax(scores, dim=-1)
    return np.matmul(p_attn, V), p_attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model is indivisible by num_heads")
        self.num_heads = num_heads
        self.d_head = d_model // num_heads

    def split_heads(self, x):
        bsz, seq_len, _ = x.shape
        return x.reshape(bsz, seq_len, self.num_heads, self.d_head).swapaxes(1, 2)

    def combine_heads(self, x):
        bsz, _, seq_len, _ = x.shape
        return x.swapaxes(1, 2).reshape(bsz, seq_len, -1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        attn_output, attn_weights = scaled_dot_product_attention(q, k, v)
        attn_output = self.combine_heads(attn_output) @ self.W_O
        if not return_weights:
            return attn_output
        return attn_output, attn_weights
