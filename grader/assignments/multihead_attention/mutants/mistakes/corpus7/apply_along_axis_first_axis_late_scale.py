# expect: softmax-wrong-axis, attention-scale-after-softmax
# softmax calls np.apply_along_axis with axis 0 (normalises down the first axis, not the rows); scaled_dot_product_attention multiplies the softmax output by 1/sqrt(d_k) instead of scaling the scores before it.
import numpy as np


def _stable_1d(v):
    v = np.asarray(v, dtype=float)
    e = np.exp(v - v.max())
    return e / e.sum()


def softmax(x):
    # run the 1-D softmax over every row
    return np.apply_along_axis(_stable_1d, 0, np.asarray(x))


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K.transpose(0, 1, 3, 2))
    weights = softmax(scores) * (1.0 / np.sqrt(d_k))
    out = np.matmul(weights, V)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model has to be divisible by num_heads")
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
        return np.transpose(x.reshape(B, T, self.num_heads, self.d_k), (0, 2, 1, 3))

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return np.transpose(x, (0, 2, 1, 3)).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        Qh = self.split_heads(np.dot(Q, self.W_Q))
        Kh = self.split_heads(np.dot(K, self.W_K))
        Vh = self.split_heads(np.dot(V, self.W_V))
        ctx, attn = scaled_dot_product_attention(Qh, Kh, Vh)
        out = np.dot(self.combine_heads(ctx), self.W_O)
        if return_weights:
            return out, attn
        return out
