# expect: attention-causal-mask
# scaled_dot_product_attention builds a key-after-query mask with np.less.outer and fills it with -inf, as a decoder would, although this layer attends to all keys.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    top = np.maximum.reduce(x, axis=-1, keepdims=True)
    e = np.exp(np.subtract(x, top))
    return np.divide(e, np.add.reduce(e, axis=-1, keepdims=True))


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d_k = Q.shape
    S = K.shape[2]
    scores = np.empty((B, H, T, S))
    for b in range(B):
        for h in range(H):
            # sum over features of outer products: scores[i, j] = sum_d Q[i, d] K[j, d]
            scores[b, h] = np.add.reduce(
                [np.multiply.outer(Q[b, h, :, d], K[b, h, :, d]) for d in range(d_k)], axis=0)
    scores /= np.sqrt(d_k)
    # position j is "ahead" of query i when j > i
    ahead = np.less.outer(np.arange(T), np.arange(S))
    scores = np.where(ahead, -np.inf, scores)
    weights = softmax(scores)
    out = np.empty((B, H, T, V.shape[-1]))
    for b in range(B):
        for h in range(H):
            out[b, h] = np.add.reduce(
                [np.multiply.outer(weights[b, h, :, j], V[b, h, j]) for j in range(S)], axis=0)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model must split evenly across the heads")
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
        return x.reshape(B, T, self.num_heads, self.d_k).swapaxes(1, 2)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.swapaxes(1, 2).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(ctx), self.W_O)
        return (out, w) if return_weights else out
