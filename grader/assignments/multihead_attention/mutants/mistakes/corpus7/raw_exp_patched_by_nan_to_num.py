# expect: softmax-unstable
# softmax calls np.exp on the raw scores with no max subtracted, and wraps the result in np.nan_to_num, which hides the overflow instead of fixing it.
import numpy as np


def softmax(x):
    """Softmax along the last axis."""
    exps = np.exp(x)
    probs = exps / np.sum(exps, axis=-1, keepdims=True)
    # got "invalid value encountered in divide" on big inputs -> clean up NaNs
    return np.nan_to_num(probs)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K.transpose(0, 1, 3, 2)) / np.sqrt(d_k)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
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
        batch_size, seq_len, _ = x.shape
        x = np.reshape(x, (batch_size, seq_len, self.num_heads, self.d_k))
        return np.transpose(x, (0, 2, 1, 3))

    def combine_heads(self, x):
        batch_size, _, seq_len, _ = x.shape
        x = np.transpose(x, (0, 2, 1, 3))
        return np.reshape(x, (batch_size, seq_len, self.d_model))

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        attn_out, attn_weights = scaled_dot_product_attention(q, k, v)
        output = np.matmul(self.combine_heads(attn_out), self.W_O)
        if return_weights:
            return output, attn_weights
        return output
