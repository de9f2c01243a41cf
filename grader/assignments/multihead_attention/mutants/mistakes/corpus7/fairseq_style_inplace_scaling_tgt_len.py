# expect: softmax-no-keepdims, attention-mutates-input, mha-kv-uses-query-length
# softmax divides by a row sum taken without keepdims=True; scaled_dot_product_attention scales the caller's Q in place with q *= scaling; forward reshapes the keys and values with the query's length tgt_len instead of their own.
import numpy as np


def softmax(x):
    x = x - np.max(x, axis=-1, keepdims=True)
    exp_x = np.exp(x)
    return exp_x / np.sum(exp_x, axis=-1)


def scaled_dot_product_attention(Q, K, V):
    head_dim = Q.shape[-1]
    scaling = head_dim ** -0.5
    q = Q
    q *= scaling
    attn_weights = np.matmul(q, np.swapaxes(K, -1, -2))
    attn_probs = softmax(attn_weights)
    attn = np.matmul(attn_probs, V)
    return attn, attn_probs


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.embed_dim = self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = self.d_k = d_model // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise ValueError("embed_dim must be divisible by num_heads")
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        bsz, seq_len, _ = x.shape
        return x.reshape(bsz, seq_len, self.num_heads, self.head_dim).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        bsz, _, seq_len, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(bsz, seq_len, self.embed_dim)

    def forward(self, query, key, value, return_weights=False):
        bsz, tgt_len, embed_dim = query.shape
        q = query @ self.W_Q
        k = key @ self.W_K
        v = value @ self.W_V
        q = q.reshape(bsz, tgt_len, self.num_heads, self.head_dim).transpose(0, 2, 1, 3)
        k = k.reshape(bsz, tgt_len, self.num_heads, self.head_dim).transpose(0, 2, 1, 3)
        v = v.reshape(bsz, tgt_len, self.num_heads, self.head_dim).transpose(0, 2, 1, 3)
        attn, attn_weights = scaled_dot_product_attention(q, k, v)
        attn = self.combine_heads(attn) @ self.W_O
        if return_weights:
            return attn, attn_weights
        return attn
