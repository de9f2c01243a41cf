# expect: mha-wrong-weights-returned
# Returns the last head's weights only.
import numpy as np


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = K.shape[-1]
    scores = np.einsum("...qd,...kd->...qk", Q, K) / d_k ** 0.5
    weights = softmax(scores)
    return np.einsum("...qk,...kd->...qd", weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.d_model = d_model
        self.h = num_heads
        self.d_k = d_model // num_heads

    def split_heads(self, x):
        return np.stack(np.split(x, self.h, axis=-1), axis=1)

    def combine_heads(self, x):
        return np.concatenate(np.split(x, x.shape[1], axis=1), axis=-1)[:, 0]

    def forward(self, Q, K, V, return_weights=False):
        B, T, _ = Q.shape
        S = K.shape[1]
        heads, maps = [], []
        for i in range(self.h):
            block = slice(i * self.d_k, (i + 1) * self.d_k)
            q = np.stack([np.dot(Q[b], self.W_Q[:, block]) for b in range(B)])  # (B, T, d_k)
            k = np.stack([np.dot(K[b], self.W_K[:, block]) for b in range(B)])  # (B, S, d_k)
            v = np.stack([np.dot(V[b], self.W_V[:, block]) for b in range(B)])  # (B, S, d_k)
            out, w = scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])
            heads.append(out[:, 0])
            maps.append(w[:, 0])
        concat = np.concatenate(heads, axis=-1)  # (B, T, D)
        out = concat @ self.W_O
        weights = np.stack(maps, axis=1)  # (B, H, T, S)
        assert weights.shape == (B, self.h, T, S)
        return (out, maps[-1]) if return_weights else out
