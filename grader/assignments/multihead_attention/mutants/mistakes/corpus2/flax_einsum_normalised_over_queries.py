# expect: attention-softmax-wrong-axis
# A Flax-style einsum port whose own softmax takes an axis, called with the
# query axis of the "...qk" scores.
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    depth = Q.shape[-1]
    logits = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(depth)
    probs = softmax(logits, axis=-2)
    return np.einsum("...qk,...kd->...qd", probs, V), probs


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_K = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_V = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_O = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        return (out, w) if return_weights else out

