# expect: softmax-global-max, attention-returns-scores
# softmax shifts by np.max(x) of the whole array rather than each row's max (rows far below it underflow to 0/0); attention returns the scaled scores instead of the softmax weights as its second value.
import numpy as np


class _Ops:
    """Small helper namespace, kept so the module functions stay one-liners."""

    @staticmethod
    def stable_exp(x):
        return np.exp(x - np.max(x))

    @staticmethod
    def normalise(e):
        return e / e.sum(axis=-1, keepdims=True)


def softmax(x):
    return _Ops.normalise(_Ops.stable_exp(np.asarray(x)))


def scaled_dot_product_attention(Q, K, V):
    logits = np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(Q.shape[-1])
    attn = softmax(logits)
    out = np.matmul(attn, V)
    return out, logits


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
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
        B, _, T, _ = x.shape
        return x.swapaxes(1, 2).reshape(B, T, -1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, attn
        return out
