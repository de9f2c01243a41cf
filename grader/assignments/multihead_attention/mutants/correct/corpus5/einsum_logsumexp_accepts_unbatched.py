# expect: correct
# Correct: every contraction is an np.einsum string, softmax goes through a hand-written logsumexp, and forward also accepts unbatched (T, D) inputs.
"""Multi-head attention, einsum edition.

I find the index strings easier to check than a chain of transposes, so every
product below is spelled out with np.einsum. Letters: b batch, h head,
t query position, s key position, d / e feature.
"""

import numpy as np


def _logsumexp(a, axis=-1):
    """log(sum(exp(a))) along `axis`, kept as a size-1 axis (like scipy's keepdims=True)."""
    a_max = np.max(a, axis=axis, keepdims=True)
    # scipy does the same: a row whose max is +-inf gets no shift at all
    a_max = np.where(np.isfinite(a_max), a_max, 0.0)
    return a_max + np.log(np.sum(np.exp(a - a_max), axis=axis, keepdims=True))


def softmax(x):
    """Numerically stable softmax over the last axis: exp(x - logsumexp(x))."""
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)  # ints -> float, the caller's array is untouched
    return np.exp(x - _logsumexp(x, axis=-1))


def scaled_dot_product_attention(Q, K, V):
    """Q (B, H, T, d_k), K and V (B, H, S, d_k) -> out (B, H, T, d_k), weights (B, H, T, S)."""
    d_k = Q.shape[-1]
    logits = np.einsum("...td,...sd->...ts", Q, K) / np.sqrt(d_k)
    weights = softmax(logits)
    out = np.einsum("...ts,...sd->...td", weights, V)
    return out, weights


class MultiHeadAttention:
    """Multi-head attention with four (D, D) projections applied as x @ W."""

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads={num_heads} must divide d_model={d_model}")
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
        """(B, T, D) -> (B, H, T, d_k)."""
        b, t, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(b, t, self.num_heads, self.d_k))

    def combine_heads(self, x):
        """(B, H, T, d_k) -> (B, T, D)."""
        b, h, t, d = x.shape
        return np.einsum("bhtd->bthd", x).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        """(B, T, D), (B, S, D), (B, S, D) -> (B, T, D) [, (B, H, T, S)].

        A single sequence given as (T, D) is treated as a batch of one and
        handed back without the batch axis.
        """
        unbatched = np.ndim(Q) == 2
        if unbatched:
            Q, K, V = Q[None], K[None], V[None]
        q = self.split_heads(np.einsum("btd,de->bte", Q, self.W_Q))
        k = self.split_heads(np.einsum("bsd,de->bse", K, self.W_K))
        v = self.split_heads(np.einsum("bsd,de->bse", V, self.W_V))
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = np.einsum("bte,ed->btd", self.combine_heads(ctx), self.W_O)
        if unbatched:
            out, attn = out[0], attn[0]
        if return_weights:
            return out, attn
        return out
