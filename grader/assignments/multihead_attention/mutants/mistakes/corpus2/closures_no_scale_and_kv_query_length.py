# expect: attention-no-scale, mha-kv-uses-query-length
# Two mistakes: closures over the query's shape reshape every input, and the
# scores are never scaled.
import numpy as np

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(np.matmul(Q, np.swapaxes(K, -2, -1)))
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_K = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_V = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_O = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        b, t, _ = Q.shape

        def heads(x):
            return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

        ctx, w = scaled_dot_product_attention(heads(Q @ self.W_Q), heads(K @ self.W_K), heads(V @ self.W_V))
        out = self.combine_heads(ctx) @ self.W_O
        return (out, w) if return_weights else out
