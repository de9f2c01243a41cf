# expect: softmax-mutates-input, mha-kv-uses-query-length
# softmax shifts the caller's array in place (x -= max) before exponentiating; forward allocates the key/value projection buffers with np.empty_like(Q), i.e. with the query length.
import numpy as np


def softmax(x):
    x -= np.max(x, axis=-1, keepdims=True)   # shift for stability
    e = np.exp(x)
    s = np.sum(e, axis=-1, keepdims=True)
    return np.divide(e, s, out=e)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d_k = Q.shape
    S = K.shape[-2]
    scores = np.empty((B, H, T, S))
    np.matmul(Q, np.swapaxes(K, -1, -2), out=scores)
    np.multiply(scores, 1.0 / np.sqrt(d_k), out=scores)
    weights = softmax(scores)
    out = np.empty((B, H, T, V.shape[-1]))
    np.matmul(weights, V, out=out)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
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
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        buf = np.empty((B, T, H, d_k), dtype=x.dtype)
        np.copyto(buf, x.transpose(0, 2, 1, 3))
        return buf.reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        # one buffer per projection, reused for the whole call
        q_buf = np.empty_like(Q, dtype=float)
        k_buf = np.empty_like(Q, dtype=float)
        v_buf = np.empty_like(Q, dtype=float)
        np.matmul(Q, self.W_Q, out=q_buf)
        np.matmul(K, self.W_K, out=k_buf)
        np.matmul(V, self.W_V, out=v_buf)
        ctx, weights = scaled_dot_product_attention(
            self.split_heads(q_buf), self.split_heads(k_buf), self.split_heads(v_buf))
        merged = self.combine_heads(ctx)
        out = np.empty_like(merged)
        np.matmul(merged, self.W_O, out=out)
        if return_weights:
            return out, weights
        return out
