# expect: correct
# The projections go straight to heads: W reshaped to (D, H, d_k) and one einsum
# per input; the output projection as W_O reshaped to (H, d_k, D).
import numpy as np


def softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    return z / z.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(np.einsum("bhtk,bhsk->bhts", Q, K) * Q.shape[-1] ** -0.5)
    return np.einsum("bhts,bhsk->bhtk", w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} features cannot be shared by {num_heads} heads")
        self.D, self.H, self.d_k = d_model, num_heads, d_model // num_heads

    def split_heads(self, x):
        return np.einsum("bthk->bhtk", x.reshape(*x.shape[:2], self.H, self.d_k))

    def combine_heads(self, x):
        return np.einsum("bhtk->bthk", x).reshape(x.shape[0], x.shape[2], -1)

    def forward(self, Q, K, V, return_weights=False):
        per_head = lambda W: W.reshape(self.D, self.H, self.d_k)  # (D, D) -> (D, H, d_k)
        q = np.einsum("btd,dhk->bhtk", Q, per_head(self.W_Q))
        k = np.einsum("bsd,dhk->bhsk", K, per_head(self.W_K))
        v = np.einsum("bsd,dhk->bhsk", V, per_head(self.W_V))
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = np.einsum("bhtk,hke->bte", ctx, self.W_O.reshape(self.H, self.d_k, self.D))
        return (out, w) if return_weights else out
