# expect: correct
# split_heads builds the (B, T, H, d_k) view with numpy.lib.stride_tricks and
# copies it; combine_heads concatenates one array per head.
import numpy as np
from numpy.lib.stride_tricks import as_strided


def softmax(x):
    z = x - np.amax(x, axis=-1, keepdims=True)
    num = np.exp(z)
    return num / np.add.reduce(num, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = K.shape[-1]
    logits = Q @ np.moveaxis(K, -1, -2) / d_k ** 0.5
    w = softmax(logits)
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model % num_heads must be 0")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        s = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, s, (d_model, d_model))
        self.W_K = rng.normal(0.0, s, (d_model, d_model))
        self.W_V = rng.normal(0.0, s, (d_model, d_model))
        self.W_O = rng.normal(0.0, s, (d_model, d_model))

    def split_heads(self, x):
        x = np.ascontiguousarray(x)
        b, t, d = x.shape
        sb, st, sf = x.strides
        view = as_strided(x, shape=(b, t, self.num_heads, self.d_k), strides=(sb, st, sf * self.d_k, sf),
                          writeable=False)  # (B, T, H, d_k)
        return view.transpose(0, 2, 1, 3).copy()

    def combine_heads(self, x):
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        heads_q = self.split_heads(Q @ self.W_Q)
        heads_k = self.split_heads(K @ self.W_K)
        heads_v = self.split_heads(V @ self.W_V)
        ctx, w = scaled_dot_product_attention(heads_q, heads_k, heads_v)
        out = self.combine_heads(ctx) @ self.W_O
        return (out, w) if return_weights else out
