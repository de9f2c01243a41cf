# expect: attention-wrong-transpose
# float32, swaps axes 1 and 2 of K instead of the last two.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=np.float32)
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    Q, K, V = (a.astype(np.float32) for a in (Q, K, V))
    scale = np.float32(1.0 / np.sqrt(Q.shape[-1]))
    w = softmax(np.matmul(Q, K.swapaxes(1, 2)) * scale)
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} % {num_heads} != 0")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(1)
        self.W_Q, self.W_K, self.W_V, self.W_O = (rng.standard_normal((d_model, d_model)).astype(np.float32)
                                                  for _ in range(4))

    def split_heads(self, x):
        b, t, _ = x.shape
        return np.moveaxis(x.reshape(b, t, self.num_heads, self.d_k), 2, 1)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.moveaxis(x, 1, 2).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        f = np.float32
        heads, w = scaled_dot_product_attention(self.split_heads(Q.astype(f) @ self.W_Q.astype(f)),
                                                self.split_heads(K.astype(f) @ self.W_K.astype(f)),
                                                self.split_heads(V.astype(f) @ self.W_V.astype(f)))
        out = self.combine_heads(heads) @ self.W_O.astype(f)
        return (out, w) if return_weights else out
