# expect: correct
# No matmul at all: the products are broadcast on new axes and summed, the
# keys' axis inserted with None.
import numpy as np


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    # (B, H, T, 1, d) * (B, H, 1, S, d) -> sum over d -> (B, H, T, S)
    scores = (Q[:, :, :, None, :] * K[:, :, None, :, :]).sum(axis=-1) / np.sqrt(Q.shape[-1])
    w = softmax(scores)
    # (B, H, T, S, 1) * (B, H, 1, S, d) -> sum over S -> (B, H, T, d)
    out = (w[..., None] * V[:, :, None, :, :]).sum(axis=-2)
    return out, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model}, num_heads={num_heads}")
        self.H = num_heads
        self.dk = d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        return np.ascontiguousarray(x.reshape((B, T, self.H, self.dk)).transpose((0, 2, 1, 3)))

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return np.ascontiguousarray(x.transpose((0, 2, 1, 3))).reshape((B, T, H * dk))

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
