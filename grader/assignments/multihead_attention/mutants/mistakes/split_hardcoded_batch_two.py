# expect: split-heads-hardcoded-shape
# A batch size of 2 written in.
import numpy as np


def softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    numerator = np.exp(shifted)
    return numerator / np.sum(numerator, axis=axis, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    depth = Q.shape[-1]
    keys_t = np.moveaxis(K, -1, -2)  # (B, H, d_k, S)
    logits = np.matmul(Q, keys_t) * (1.0 / np.sqrt(depth))
    attn = softmax(logits, axis=-1)
    return np.matmul(attn, V), attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        rng = np.random.default_rng(1)
        self.W_Q, self.W_K, self.W_V, self.W_O = (rng.standard_normal((d_model, d_model)) for _ in range(4))

    def split_heads(self, x):
        batch, length = 2, x.shape[1]
        x = x.reshape(batch, length, self.num_heads, self.head_dim)
        return np.moveaxis(x, 2, 1)

    def combine_heads(self, x):
        batch, _, length, _ = x.shape
        return np.moveaxis(x, 1, 2).reshape(batch, length, self.d_model)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        context, attn = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(context), self.W_O)
        return (out, attn) if return_weights else out
