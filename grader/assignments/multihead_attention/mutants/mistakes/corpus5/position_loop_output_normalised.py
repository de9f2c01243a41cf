# expect: mha-adds-layer-norm
# forward finishes by normalising every output position to zero mean / unit variance (a LayerNorm without parameters), which belongs to the surrounding block, not to attention
"""Loop-heavy multi-head attention, no ``np.linalg`` helpers.

Statistics are accumulated with explicit Python loops over positions and
features, the way one would write it in C.
"""

import numpy as np

EPS = 1e-5


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        s = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, s, (d_model, d_model))
        self.W_K = rng.normal(0.0, s, (d_model, d_model))
        self.W_V = rng.normal(0.0, s, (d_model, d_model))
        self.W_O = rng.normal(0.0, s, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        # keep the activations well scaled: normalise each position's features
        B, T, D = out.shape
        for b in range(B):
            for t in range(T):
                mean = 0.0
                for f in range(D):
                    mean += out[b, t, f]
                mean /= D
                var = 0.0
                for f in range(D):
                    var += (out[b, t, f] - mean) ** 2
                var /= D
                out[b, t] = (out[b, t] - mean) / np.sqrt(var + EPS)
        if return_weights:
            return out, weights
        return out
