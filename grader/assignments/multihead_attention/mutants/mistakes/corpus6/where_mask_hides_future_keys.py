# expect: attention-causal-mask
# scaled_dot_product_attention defaults to causal=True and uses np.where to set every key after the query's position to -inf, so encoder/cross attention loses its later keys.
import numpy as np

NEG_INF = -np.inf


def softmax(x):
    x = np.asarray(x)
    row_max = x.max(axis=-1, keepdims=True)
    # -inf logits (masked positions) must come out as exactly 0
    ex = np.where(np.isneginf(x), 0.0, np.exp(x - row_max))
    return ex / ex.sum(axis=-1, keepdims=True)


def future_mask(n_queries, n_keys):
    """True where query i would look at key j > i."""
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1)


def scaled_dot_product_attention(Q, K, V, causal=True):
    d_k = Q.shape[-1]
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(d_k)  # (B, H, T, S)
    if causal:
        mask = future_mask(scores.shape[-2], scores.shape[-1])
        scores = np.where(mask, NEG_INF, scores)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} not divisible by num_heads={num_heads}")
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
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        batch, heads, length, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
