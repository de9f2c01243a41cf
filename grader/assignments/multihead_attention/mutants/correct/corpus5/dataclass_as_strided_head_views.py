# expect: correct
# no mistakes: the layer is a dataclass with __post_init__, heads are cut with np.lib.stride_tricks.as_strided, softmax works on its own copy in place.
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided


def softmax(x):
    # private working copy; ints are promoted, float32 stays float32
    buf = np.array(x, dtype=np.result_type(x, np.float32), copy=True)
    buf -= np.maximum.reduce(buf, axis=-1, keepdims=True)
    np.exp(buf, out=buf)
    buf /= np.add.reduce(buf, axis=-1, keepdims=True)
    return buf


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) * (1.0 / np.sqrt(d_k))
    p = softmax(scores)
    return np.matmul(p, V), p


def _init_matrix(rng, d):
    return rng.normal(0.0, 1.0 / np.sqrt(d), (d, d))


@dataclass(eq=False)
class MultiHeadAttention:
    d_model: int = 8
    num_heads: int = 2
    d_k: int = field(init=False)
    W_Q: np.ndarray = field(init=False, repr=False)
    W_K: np.ndarray = field(init=False, repr=False)
    W_V: np.ndarray = field(init=False, repr=False)
    W_O: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.d_model % self.num_heads != 0:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of num_heads ({self.num_heads})")
        self.d_k = self.d_model // self.num_heads
        rng = np.random.default_rng(0)
        self.W_Q = _init_matrix(rng, self.d_model)
        self.W_K = _init_matrix(rng, self.d_model)
        self.W_V = _init_matrix(rng, self.d_model)
        self.W_O = _init_matrix(rng, self.d_model)

    def split_heads(self, x):
        x = np.ascontiguousarray(x)
        B, T, _ = x.shape
        sB, sT, sF = x.strides
        # head h starts h*d_k features in; walking T still jumps a whole row
        view = as_strided(x, shape=(B, self.num_heads, T, self.d_k),
                          strides=(sB, self.d_k * sF, sT, sF), writeable=False)
        return view.copy()

    def combine_heads(self, x):
        x = np.ascontiguousarray(x)
        B, H, T, d = x.shape
        sB, sH, sT, sF = x.strides
        view = as_strided(x, shape=(B, T, H, d), strides=(sB, sT, sH, sF), writeable=False)
        return view.reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, weights
        return out
