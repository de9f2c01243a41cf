# expect: attention-wrong-scale
# scaled_dot_product_attention computes scale = d_k ** 0.5 (the timm idiom is head_dim ** -0.5) and multiplies the scores by it, so scores get multiplied by sqrt(d_k) instead of divided.
import numpy as np


def softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    ez = np.exp(z)
    return ez / ez.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    head_dim = Q.shape[-1]
    scale = head_dim ** 0.5
    attn = (Q @ K.swapaxes(-2, -1)) * scale
    attn = softmax(attn)
    x = attn @ V
    return x, attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"dim {d_model} should be divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.d_model = d_model
        self.d_k = self.head_dim = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        B, N, C = x.shape
        return x.reshape(B, N, self.num_heads, C // self.num_heads).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, _, N, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, N, -1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        x, attn = scaled_dot_product_attention(q, k, v)
        x = self.combine_heads(x) @ self.W_O
        if return_weights:
            return x, attn
        return x
