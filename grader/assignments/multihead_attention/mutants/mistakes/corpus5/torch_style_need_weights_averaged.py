# expect: mha-wrong-weights-returned
# Mistake in forward: like torch's average_attn_weights default, it returns the weights averaged over the heads, (B, T, S), instead of the per-head (B, H, T, S) maps.
"""A NumPy re-write of the parts of torch.nn.MultiheadAttention we need
(batch_first=True, no bias, no dropout)."""

import numpy as np


def softmax(x):
    """F.softmax(x, dim=-1), stable."""
    x_max = np.max(x, axis=-1, keepdims=True)
    unnormalized = np.exp(x - x_max)
    return unnormalized / np.sum(unnormalized, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    """Like F.scaled_dot_product_attention, but also hands back the weights."""
    scale_factor = 1.0 / np.sqrt(Q.shape[-1])
    attn_weight = (Q @ np.swapaxes(K, -2, -1)) * scale_factor   # (bsz, heads, tgt_len, src_len)
    attn_weight = softmax(attn_weight)
    return attn_weight @ V, attn_weight


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        if self.d_k * num_heads != d_model:
            raise ValueError("embed_dim must be divisible by num_heads")
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        bsz, seq_len, _ = x.shape
        # x.view(bsz, seq_len, num_heads, head_dim).transpose(1, 2)
        return np.swapaxes(x.reshape(bsz, seq_len, self.num_heads, self.d_k), 1, 2)

    def combine_heads(self, x):
        bsz, _, seq_len, _ = x.shape
        # x.transpose(1, 2).contiguous().view(bsz, seq_len, embed_dim)
        return np.ascontiguousarray(np.swapaxes(x, 1, 2)).reshape(bsz, seq_len, -1)

    def forward(self, Q, K, V, return_weights=False):
        query, key, value = Q, K, V
        q = self.split_heads(query @ self.W_Q)
        k = self.split_heads(key @ self.W_K)
        v = self.split_heads(value @ self.W_V)
        attn_output, attn_output_weights = scaled_dot_product_attention(q, k, v)
        attn_output = self.combine_heads(attn_output) @ self.W_O
        if not return_weights:
            return attn_output
        # average_attn_weights=True, as torch does by default
        attn_output_weights = attn_output_weights.mean(axis=1)
        return attn_output, attn_output_weights
