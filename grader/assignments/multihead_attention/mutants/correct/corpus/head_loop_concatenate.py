# expect: correct
# forward loops over the heads, slicing each head's block from the projected
# inputs and concatenating the outputs; split_heads and combine_heads stand alone.
import numpy as np


def softmax(x):
    x_max = x.max(axis=-1, keepdims=True)
    ex = np.exp(x - x_max)
    return ex / ex.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d = Q.shape[-1]
    w = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d))
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

    def split_heads(self, x):
        return np.stack([x[..., i * self.d_k:(i + 1) * self.d_k] for i in range(self.num_heads)], axis=1)

    def combine_heads(self, x):
        return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q, k, v = Q @ self.W_Q, K @ self.W_K, V @ self.W_V
        outs, maps = [], []
        for i in range(self.num_heads):
            block = slice(i * self.d_k, (i + 1) * self.d_k)
            o, w = scaled_dot_product_attention(q[None, ..., block], k[None, ..., block], v[None, ..., block])
            outs.append(o[0])
            maps.append(w[0])
        out = np.concatenate(outs, axis=-1) @ self.W_O
        if return_weights:
            return out, np.stack(maps, axis=1)
        return out
