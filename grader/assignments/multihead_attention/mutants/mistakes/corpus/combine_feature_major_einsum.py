# expect: combine-heads-wrong-order
# combine_heads puts d_k before H ('bhtd->btdh'), so the concatenated features
# are interleaved across heads.
import numpy as np


def softmax(x):
    e = np.exp(np.subtract(x, np.max(x, axis=-1, keepdims=True)))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(K.shape[-1])
    w = softmax(scores)
    return np.einsum("bhts,bhsd->bhtd", w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model not divisible by num_heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(B, T, self.num_heads, self.d_k))

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return np.einsum("bhtd->btdh", x).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        out, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                              self.split_heads(V @ self.W_V))
        out = self.combine_heads(out) @ self.W_O
        return (out, w) if return_weights else out
