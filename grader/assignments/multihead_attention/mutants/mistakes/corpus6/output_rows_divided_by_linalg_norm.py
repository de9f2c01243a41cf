# expect: mha-adds-layer-norm
# forward divides each output row by its np.linalg.norm, a normalisation that belongs to the surrounding block rather than to the attention layer.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    m = np.nanmax(x, axis=-1, keepdims=True)
    ex = np.exp(x - m)
    return ex / ex.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = K.shape[-1]
    sim = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(d_k)
    attn = softmax(sim)
    return np.einsum("...qk,...kd->...qd", attn, V), attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model has to be a multiple of num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        n, t, _ = x.shape
        return np.einsum("nthd->nhtd", x.reshape(n, t, self.num_heads, self.d_k))

    def combine_heads(self, x):
        n, h, t, d = x.shape
        return np.einsum("nhtd->nthd", x).reshape(n, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        # keep the output on a comparable scale whatever d_model is
        out = out / np.linalg.norm(out, axis=-1, keepdims=True)
        if return_weights:
            return out, attn
        return out
