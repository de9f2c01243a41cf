# expect: mha-wrong-projection, split-heads-interleaved
# forward projects through an nn.Linear-style helper that computes x @ W.T, so every projection uses the transposed matrix; split_heads views the features as (d_k, H) and permutes, dealing features to heads round-robin instead of in contiguous blocks.
import numpy as np


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    p = np.exp(x - m)
    p /= np.sum(p, axis=-1, keepdims=True)
    return p


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(Q.shape[-1])
    p_attn = softmax(scores)
    return np.matmul(p_attn, V), p_attn


def linear(x, weight):
    """Same as torch.nn.functional.linear without bias: y = x A^T."""
    return np.matmul(x, weight.T)


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
        # x.view(B, T, d_k, H).permute(0, 3, 1, 2)
        B, T, _ = x.shape
        return x.reshape(B, T, self.d_k, self.num_heads).transpose(0, 3, 1, 2)

    def combine_heads(self, x):
        # x.permute(0, 2, 1, 3).contiguous().view(B, T, D)
        B, H, T, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(linear(Q, self.W_Q))
        k = self.split_heads(linear(K, self.W_K))
        v = self.split_heads(linear(V, self.W_V))
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = linear(self.combine_heads(ctx), self.W_O)
        if return_weights:
            return out, attn
        return out
