# expect: attention-scale-after-softmax, mha-mutates-input
# scaled_dot_product_attention divides the softmax probabilities by sqrt(d_k) instead of the scores; ProjectionMixin.project uses `x @= W`, so forward overwrites the caller's Q, K and V.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    probs = softmax(np.matmul(Q, np.swapaxes(K, -1, -2)))
    probs = probs / np.sqrt(d_k)   # temperature 1/sqrt(d_k)
    return np.matmul(probs, V), probs


class ProjectionMixin:
    """x @ W without allocating a second (B, T, D) array."""

    @staticmethod
    def project(x, W):
        x @= W
        return x


class BaseAttention:
    """Owns the sizes and the four projection matrices."""

    def __init__(self, d_model, num_heads):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not a multiple of num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def attend(self, q, k, v):
        return scaled_dot_product_attention(q, k, v)

    def forward(self, Q, K, V, return_weights=False):
        raise NotImplementedError


class MultiHeadAttention(ProjectionMixin, BaseAttention):
    def __init__(self, d_model=8, num_heads=2):
        BaseAttention.__init__(self, d_model, num_heads)

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self.project(Q, self.W_Q))
        k = self.split_heads(self.project(K, self.W_K))
        v = self.split_heads(self.project(V, self.W_V))
        heads, weights = self.attend(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
