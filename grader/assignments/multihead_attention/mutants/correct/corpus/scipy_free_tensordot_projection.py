# expect: correct
# Projections with np.tensordot over the feature axis, an einsum for the head
# split's transpose, the softmax through np.divide into a fresh output array.
import numpy as np


def softmax(x):
    e = np.exp(np.subtract(x, np.max(x, axis=-1, keepdims=True)))
    return np.divide(e, np.sum(e, axis=-1, keepdims=True), out=np.empty_like(e))


def scaled_dot_product_attention(Q, K, V):
    scores = np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(K.shape[-1])
    w = softmax(scores)
    return np.einsum("bhts,bhsd->bhtd", w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"expected d_model divisible by num_heads, got {d_model} and {num_heads}")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(B, T, self.num_heads, self.d_k))

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return np.einsum("bhtd->bthd", x).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        proj = lambda x, W: np.tensordot(x, W, axes=([-1], [0]))  # (B, T, D) x (D, D) -> (B, T, D)
        q = self.split_heads(proj(Q, self.W_Q))
        k = self.split_heads(proj(K, self.W_K))
        v = self.split_heads(proj(V, self.W_V))
        out, w = scaled_dot_product_attention(q, k, v)
        out = proj(self.combine_heads(out), self.W_O)
        return (out, w) if return_weights else out
