# expect: correct
# no mistakes: einsum everywhere, softmax through a hand-written log-sum-exp, the four matrices live in one dict behind properties.
"""Multi-head attention, einsum edition.

I keep all parameters in ``self.params`` (makes it easy to dump/load them
later) and expose W_Q ... W_O as properties so the class still has the
attributes the assignment asks for.
"""

import numpy as np


def _logsumexp(z):
    """log(sum(exp(z))) over the last axis, kept as a size-1 axis."""
    peak = np.max(z, axis=-1, keepdims=True)  # finite: every row has a finite entry
    return peak + np.log(np.sum(np.exp(z - peak), axis=-1, keepdims=True))


def softmax(x):
    z = np.asarray(x)
    if not np.issubdtype(z.dtype, np.floating):
        z = z.astype(np.float64)
    # softmax(z) = exp(z - logsumexp(z)); every exponent is <= 0, -inf -> 0
    return np.exp(z - _logsumexp(z))


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    logits = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(d_k)  # (B, H, T, S)
    attn = softmax(logits)
    context = np.einsum("...qk,...kd->...qd", attn, V)  # (B, H, T, d_k)
    return context, attn


_PARAM_NAMES = ("W_Q", "W_K", "W_V", "W_O")


def _param(name):
    def get(self):
        return self.params[name]

    def put(self, value):
        self.params[name] = np.asarray(value)

    return property(get, put, doc=f"{name}, (D, D), used as x @ {name}")


class MultiHeadAttention:
    W_Q = _param("W_Q")
    W_K = _param("W_K")
    W_V = _param("W_V")
    W_O = _param("W_O")

    def __init__(self, d_model=8, num_heads=2):
        if num_heads <= 0 or d_model % num_heads:
            raise ValueError(f"{num_heads} heads cannot share d_model={d_model} evenly")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.params = {}
        for name in _PARAM_NAMES:  # same draw order as the handout: Q, K, V, O
            self.params[name] = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(b, t, self.num_heads, self.d_k))

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.einsum("bhtd->bthd", x).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        p = self.params
        q = self.split_heads(np.einsum("btd,de->bte", Q, p["W_Q"]))
        k = self.split_heads(np.einsum("bsd,de->bse", K, p["W_K"]))
        v = self.split_heads(np.einsum("bsd,de->bse", V, p["W_V"]))
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = np.einsum("bte,ef->btf", self.combine_heads(ctx), p["W_O"])
        return (out, attn) if return_weights else out
