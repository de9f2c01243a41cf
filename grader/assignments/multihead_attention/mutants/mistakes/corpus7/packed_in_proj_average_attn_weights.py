# expect: mha-no-divisibility-check, mha-wrong-weights-returned
# __init__ sets head_dim = embed_dim // num_heads without checking that it divides evenly; forward returns the weights averaged over the heads (torch's average_attn_weights=True default) instead of one map per head.
"""NumPy port of torch.nn.MultiheadAttention (batch_first=True, no bias, no dropout).

torch keeps the three input projections in one packed ``in_proj_weight`` of
shape ``(3 * embed_dim, embed_dim)`` and applies it as ``F.linear(x, W) = x @ W.T``.
The exercise wants ``x @ W`` matrices called W_Q, W_K, W_V, W_O, so those are
exposed as properties that read and write the transposed row blocks.
"""

import math

import numpy as np


def _softmax_dim(x, dim):
    # same recipe as torch.softmax: subtract the max along `dim`, exp, normalise
    x = np.asarray(x)
    x_max = np.amax(x, axis=dim, keepdims=True)
    unnorm = np.exp(np.subtract(x, x_max))
    return unnorm / np.sum(unnorm, axis=dim, keepdims=True)


def softmax(x):
    """torch.softmax(x, dim=-1)."""
    return _softmax_dim(x, -1)


def scaled_dot_product_attention(Q, K, V):
    """F.scaled_dot_product_attention without mask/dropout, but also returning the weights."""
    head_dim = Q.shape[-1]
    # torch scales q before the bmm (q = q * scaling); a new array, Q is not touched
    q_scaled = Q * (1.0 / math.sqrt(head_dim))
    attn_output_weights = softmax(q_scaled @ np.swapaxes(K, -2, -1))  # (B, H, T, S)
    attn_output = attn_output_weights @ V  # (B, H, T, d_k)
    return attn_output, attn_output_weights


class MultiHeadAttention:
    """torch.nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True)."""

    def __init__(self, d_model=8, num_heads=2):
        self.embed_dim = d_model
        self.head_dim = d_model // num_heads
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = self.head_dim
        self.in_proj_weight = np.empty((3 * d_model, d_model))
        self.out_proj_weight = np.empty((d_model, d_model))
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        # drawn in the order the exercise draws them, then stored transposed
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    # ---- x @ W views onto the packed torch layout -------------------------
    def _block(self, i):
        E = self.embed_dim
        return self.in_proj_weight[i * E:(i + 1) * E]

    @property
    def W_Q(self):
        return self._block(0).T

    @W_Q.setter
    def W_Q(self, value):
        self._block(0)[...] = np.asarray(value).T

    @property
    def W_K(self):
        return self._block(1).T

    @W_K.setter
    def W_K(self, value):
        self._block(1)[...] = np.asarray(value).T

    @property
    def W_V(self):
        return self._block(2).T

    @W_V.setter
    def W_V(self, value):
        self._block(2)[...] = np.asarray(value).T

    @property
    def W_O(self):
        return self.out_proj_weight.T

    @W_O.setter
    def W_O(self, value):
        self.out_proj_weight[...] = np.asarray(value).T

    # ---- head bookkeeping -------------------------------------------------
    def split_heads(self, x):
        bsz, seq, _ = x.shape
        # torch: q.view(tgt_len, bsz * num_heads, head_dim); here batch-first
        return x.reshape(bsz, seq, self.num_heads, self.head_dim).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        bsz, heads, seq, hd = x.shape
        return x.transpose(0, 2, 1, 3).reshape(bsz, seq, heads * hd)

    def forward(self, Q, K, V, return_weights=False):
        E = self.embed_dim
        if Q is K and K is V:
            # self-attention fast path of F._in_projection_packed: one matmul, chunk(3)
            q, k, v = np.split(Q @ self.in_proj_weight.T, 3, axis=-1)
        else:
            q = Q @ self.in_proj_weight[:E].T
            k = K @ self.in_proj_weight[E:2 * E].T
            v = V @ self.in_proj_weight[2 * E:].T
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        attn_output, attn_output_weights = scaled_dot_product_attention(q, k, v)
        attn_output = self.combine_heads(attn_output) @ self.out_proj_weight.T
        if return_weights:
            # need_weights=True, average_attn_weights=True, as torch does by default
            return attn_output, attn_output_weights.mean(axis=1)
        return attn_output
