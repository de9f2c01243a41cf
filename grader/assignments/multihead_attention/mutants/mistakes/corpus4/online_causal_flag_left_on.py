# expect: attention-causal-mask, mha-no-output-projection
# Two mistakes: the attention keeps the causal flag of the decoder kernel it was copied from, on by default, and forward never applies W_O.
"""Multi-head attention in the FlashAttention manner: the keys are visited in blocks, with a running row max,
a running normaliser and a running output that are rescaled whenever the max grows."""

import numpy as np

BLOCK = 4  # keys per block; any positive size gives the same result


def _safe(m):
    # A row whose blocks so far were all -inf has m = -inf; shifting by 0 there
    # keeps exp(-inf - m) = 0 instead of exp(nan).
    return np.where(np.isneginf(m), 0.0, m)


def softmax(x):
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    m = np.full(x.shape[:-1] + (1,), -np.inf)  # running max, (..., 1)
    l = np.zeros(x.shape[:-1] + (1,))  # running sum of exp(x - m), (..., 1)
    for start in range(0, n, BLOCK):
        blk = x[..., start:start + BLOCK]
        m_new = np.maximum(m, blk.max(axis=-1, keepdims=True))
        c = _safe(m_new)
        l = l * np.exp(m - c) + np.exp(blk - c).sum(axis=-1, keepdims=True)
        m = m_new
    return np.exp(x - m) / l


def scaled_dot_product_attention(Q, K, V, causal=True):
    d_k = Q.shape[-1]
    S = K.shape[-2]
    scale = 1.0 / np.sqrt(d_k)
    lead = Q.shape[:-1]  # (B, H, T)
    m = np.full(lead + (1,), -np.inf)
    l = np.zeros(lead + (1,))
    acc = np.zeros(lead + (V.shape[-1],))  # (B, H, T, d_k)
    score_blocks = []
    for start in range(0, S, BLOCK):
        k_blk = K[..., start:start + BLOCK, :]  # (B, H, s, d_k)
        v_blk = V[..., start:start + BLOCK, :]
        s = (Q @ np.swapaxes(k_blk, -1, -2)) * scale  # (B, H, T, s)
        if causal:
            # query t may look at keys 0..t only
            q_pos = np.arange(Q.shape[-2])[:, None]
            k_pos = np.arange(start, start + s.shape[-1])[None, :]
            s = np.where(k_pos > q_pos, -np.inf, s)
        score_blocks.append(s)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        c = _safe(m_new)
        alpha = np.exp(m - c)  # how much the old partial sums shrink
        p = np.exp(s - c)
        l = alpha * l + p.sum(axis=-1, keepdims=True)
        acc = alpha * acc + p @ v_blk
        m = m_new
    out = acc / l
    # The weights themselves, for whoever asks: one more pass with the final max and sum.
    weights = np.exp(np.concatenate(score_blocks, axis=-1) - m) / l  # (B, H, T, S)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        heads, rest = divmod(d_model, num_heads)
        if rest:
            raise ValueError(f"d_model={d_model} leaves {rest} features over for num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).swapaxes(1, 2)  # (B, H, T, d_k)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.swapaxes(1, 2).reshape(B, T, H * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads)  # (B, T, D)
        return (out, weights) if return_weights else out
