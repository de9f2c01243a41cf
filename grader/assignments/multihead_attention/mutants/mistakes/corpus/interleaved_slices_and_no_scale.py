# expect: split-heads-interleaved, attention-no-scale
# Two mistakes: heads taken as strided columns x[..., h::H], and scores never scaled.
import numpy as np


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, K.transpose(0, 1, 3, 2))
    w = softmax(scores)
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads

    def split_heads(self, x):
        H = self.num_heads
        return np.stack([x[..., h::H] for h in range(H)], axis=1)

    def combine_heads(self, x):
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
