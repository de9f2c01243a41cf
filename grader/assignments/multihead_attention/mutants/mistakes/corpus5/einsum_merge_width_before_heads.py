# expect: combine-heads-wrong-order
# combine_heads: the einsum "bhtd->btdh" puts the head axis last before flattening, so the merged features come out d_k-major (interleaved across heads) instead of head 0's block, then head 1's, ...
import numpy as np


def softmax(x):
    x = np.asarray(x)
    m = np.amax(x, axis=-1, keepdims=True)
    y = np.exp(x - m)
    return y / np.einsum("...n->...", y)[..., None]


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    s = np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(d_k)
    a = softmax(s)
    return np.einsum("bhts,bhsd->bhtd", a, V), a


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"can't split {d_model} features into {num_heads} equal heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(b, t, self.num_heads, self.d_k))

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.einsum("bhtd->btdh", x).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.einsum("btd,de->bte", Q, self.W_Q))
        k = self.split_heads(np.einsum("bsd,de->bse", K, self.W_K))
        v = self.split_heads(np.einsum("bsd,de->bse", V, self.W_V))
        z, a = scaled_dot_product_attention(q, k, v)
        out = np.einsum("bte,ef->btf", self.combine_heads(z), self.W_O)
        if return_weights:
            return out, a
        return out
