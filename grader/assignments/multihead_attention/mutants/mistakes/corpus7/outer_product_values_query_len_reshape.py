# expect: attention-wrong-value-product, mha-kv-uses-query-length
# attention forms weights[..., None] * V[..., None, :, :] and sums over axis -3 (the queries) instead of -2 (the keys), giving a (B, H, S, d_k) output; forward's local heads() helper reshapes K and V with the query length T.
import numpy as np


def softmax(x):
    x = np.asarray(x)
    z = x - x.max(axis=-1, keepdims=True)
    num = np.exp(z)
    return num / num.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)   # (B, H, T, S)
    weights = softmax(scores)
    # weighted sum of values, written out with broadcasting: (B,H,T,S,1) * (B,H,1,S,d)
    out = (weights[..., None] * V[..., None, :, :]).sum(axis=-3)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads does not divide d_model")
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
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        batch, seq_len, _ = Q.shape
        H, d_k = self.num_heads, self.d_k

        def heads(x):
            return x.reshape(batch, seq_len, H, d_k).transpose(0, 2, 1, 3)

        q = heads(Q @ self.W_Q)
        k = heads(K @ self.W_K)
        v = heads(V @ self.W_V)
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, weights
        return out
