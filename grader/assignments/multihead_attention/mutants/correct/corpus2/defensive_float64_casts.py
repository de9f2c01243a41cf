# expect: correct
# A cautious student: asserts on every shape, works in float64 whatever comes
# in (float16 included) and casts back to the caller's floating dtype.
import numpy as np


def _as_float(x):
    x = np.asarray(x)
    out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    return x.astype(np.float64), out_dtype


def softmax(x):
    x64, dtype = _as_float(x)
    assert x64.ndim >= 1, "softmax needs at least one axis"
    z = x64 - x64.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=-1, keepdims=True)).astype(dtype)


def scaled_dot_product_attention(Q, K, V):
    q, dtype = _as_float(Q)
    k, _ = _as_float(K)
    v, _ = _as_float(V)
    assert q.shape[-1] == k.shape[-1], (q.shape, k.shape)
    assert k.shape[-2] == v.shape[-2], (k.shape, v.shape)
    scores = q @ np.swapaxes(k, -2, -1) / np.float64(np.sqrt(q.shape[-1]))
    w = softmax(scores)
    return (w @ v).astype(dtype), w.astype(dtype)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if not isinstance(num_heads, int) or num_heads <= 0 or d_model % num_heads != 0:
            raise ValueError(f"num_heads={num_heads} must be a positive divisor of d_model={d_model}")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_K = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_V = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_O = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))

    def split_heads(self, x):
        assert x.ndim == 3 and x.shape[-1] == self.num_heads * self.d_k, x.shape
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        assert x.ndim == 4, x.shape
        b, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        assert K.shape[:2] == V.shape[:2], (K.shape, V.shape)
        q = self.split_heads(np.asarray(Q, dtype=np.float64) @ self.W_Q)
        k = self.split_heads(np.asarray(K, dtype=np.float64) @ self.W_K)
        v = self.split_heads(np.asarray(V, dtype=np.float64) @ self.W_V)
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        return (out, w) if return_weights else out
