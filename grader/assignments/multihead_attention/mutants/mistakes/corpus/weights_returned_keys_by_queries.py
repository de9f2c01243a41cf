# expect: mha-wrong-weights-returned
# forward hands back the maps transposed, (B, H, S, T), "keys attended by queries".
import numpy as np


def softmax(x):
    y = np.exp(x - x.max(axis=-1, keepdims=True))
    return y / y.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(Q.shape[-1]))
    return np.einsum("bhts,bhsd->bhtd", w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, np.swapaxes(w, -1, -2)) if return_weights else o
