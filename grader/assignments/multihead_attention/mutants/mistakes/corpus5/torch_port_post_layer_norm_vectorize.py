# expect: mha-adds-layer-norm
# forward: the output after W_O is passed through a LayerNorm (zero mean, unit variance per position), which belongs to the surrounding block, not to the attention layer.
import math

import numpy as np

_exp = np.vectorize(math.exp, otypes=[float])


def softmax(x):
    x = np.asarray(x, dtype=float)
    shifted = x - x.max(axis=-1, keepdims=True)
    num = _exp(shifted)
    return num / num.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    attn = np.matmul(Q, np.swapaxes(K, -2, -1)) / math.sqrt(d_k)
    attn = softmax(attn)                 # F.softmax(attn, dim=-1)
    return np.matmul(attn, V), attn


class LayerNorm:
    """nn.LayerNorm(d_model) without the learnable affine part."""

    def __init__(self, dim, eps=1e-5):
        self.dim = dim
        self.eps = eps

    def __call__(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        var = x.var(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))
        self.norm = LayerNorm(d_model)

    def split_heads(self, x):
        # x.view(bs, -1, h, d_k).transpose(1, 2)
        bs, n, _ = x.shape
        return x.reshape(bs, n, self.num_heads, self.d_k).swapaxes(1, 2)

    def combine_heads(self, x):
        # x.transpose(1, 2).contiguous().view(bs, -1, h * d_k)
        bs, h, n, d_k = x.shape
        return np.ascontiguousarray(x.swapaxes(1, 2)).reshape(bs, n, h * d_k)

    def forward(self, Q, K, V, return_weights=False):
        query = self.split_heads(Q @ self.W_Q)
        key = self.split_heads(K @ self.W_K)
        value = self.split_heads(V @ self.W_V)
        x, attn = scaled_dot_product_attention(query, key, value)
        x = self.combine_heads(x) @ self.W_O
        x = self.norm(x)
        if return_weights:
            return x, attn
        return x
