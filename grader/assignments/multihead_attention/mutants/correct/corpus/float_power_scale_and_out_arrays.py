# expect: correct
# The scale as np.float_power(d, -0.5), softmax with np.exp(..., out=) on its own
# buffer, heads through reshape with order-free tuple shapes.
import numpy as np


def softmax(x):
    buf = x - x.max(axis=-1, keepdims=True)
    np.exp(buf, out=buf)
    buf /= buf.sum(axis=-1, keepdims=True)
    return buf


def scaled_dot_product_attention(Q, K, V):
    factor = np.float_power(Q.shape[-1], -0.5)
    w = softmax(np.matmul(Q, K.transpose(0, 1, 3, 2)) * factor)
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} equal heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

    def split_heads(self, x):
        shape = x.shape[:-1] + (self.num_heads, self.d_k)  # (B, T, H, d_k)
        return x.reshape(shape).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        y = x.transpose(0, 2, 1, 3)  # (B, T, H, d_k)
        return y.reshape(y.shape[:2] + (-1,))

    def forward(self, Q, K, V, return_weights=False):
        out, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                              self.split_heads(V @ self.W_V))
        out = self.combine_heads(out) @ self.W_O
        return (out, w) if return_weights else out
