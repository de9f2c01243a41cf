# expect: mha-wrong-weights-returned
# forward returns the attention weights averaged over the heads, (B, T, S), copying nn.MultiheadAttention's average_attn_weights=True default, instead of the per-head (B, H, T, S) maps.
import numpy as np


def softmax(x, dim=-1):
    x = x - np.max(x, axis=dim, keepdims=True)
    x = np.exp(x)
    return x / np.sum(x, axis=dim, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    L, E = Q.shape[-2], Q.shape[-1]
    scale_factor = 1 / np.sqrt(E)
    attn_weight = Q @ np.swapaxes(K, -2, -1) * scale_factor
    attn_weight = softmax(attn_weight)  # dim=-1
    return attn_weight @ V, attn_weight


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.embed_dim = self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = self.d_k = d_model // num_heads
        if self.head_dim * num_heads != d_model:
            raise ValueError("embed_dim must be divisible by num_heads")
        rng = np.random.default_rng(0)
        bound = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, bound, (d_model, d_model))
        self.W_K = rng.normal(0.0, bound, (d_model, d_model))
        self.W_V = rng.normal(0.0, bound, (d_model, d_model))
        self.W_O = rng.normal(0.0, bound, (d_model, d_model))

    def split_heads(self, x):
        bsz, seq, _ = x.shape
        return x.reshape(bsz, seq, self.num_heads, self.head_dim).swapaxes(1, 2)

    def combine_heads(self, x):
        bsz, _, seq, _ = x.shape
        return x.swapaxes(1, 2).reshape(bsz, seq, self.embed_dim)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        attn_output, attn_output_weights = scaled_dot_product_attention(q, k, v)
        attn_output = self.combine_heads(attn_output) @ self.W_O
        if return_weights:
            # optionally average attention weights over heads
            attn_output_weights = attn_output_weights.mean(axis=1)
            return attn_output, attn_output_weights
        return attn_output
