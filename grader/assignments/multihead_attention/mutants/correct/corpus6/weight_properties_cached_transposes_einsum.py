# expect: correct
# Weights are properties whose setter caches a transposed view (column-vector convention W^T x), einsum everywhere, softmax via a per-row log-sum-exp; no known mistakes.
"""Multi-head attention, column-vector flavoured.

I think of a projection as ``y = W^T x`` for a column x, so every weight keeps a
transposed copy next to it.  The copy is refreshed by the property setter, so
assigning ``layer.W_Q = something`` after construction is picked up, and since
the cached thing is a *view* (``W.T``) even in-place edits of W show through.
"""

import numpy as np


def softmax(x):
    """exp(x - logsumexp(x)) along the last axis, with the max taken per row."""
    x = np.asarray(x)
    top = np.max(x, axis=-1, keepdims=True)           # (..., 1)
    centred = x - top                                 # <= 0, -inf stays -inf
    log_norm = np.log(np.sum(np.exp(centred), axis=-1, keepdims=True))
    return np.exp(centred - log_norm)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(d_k)
    weights = softmax(scores)
    out = np.einsum("bhts,bhsd->bhtd", weights, V)
    return out, weights


def _weight(name):
    store, cache = "_" + name, "_" + name + "_T"

    def fget(self):
        return getattr(self, store)

    def fset(self, value):
        value = np.asarray(value)
        setattr(self, store, value)
        setattr(self, cache, value.T)  # a view, never a stale copy

    return property(fget, fset, doc="(D, D) projection, applied as x @ %s" % name)


class MultiHeadAttention:
    W_Q = _weight("W_Q")
    W_K = _weight("W_K")
    W_V = _weight("W_V")
    W_O = _weight("W_O")

    def __init__(self, d_model=8, num_heads=2):
        heads_fit, leftover = divmod(d_model, num_heads)
        if leftover:
            raise ValueError(
                f"{num_heads} heads cannot share d_model={d_model} evenly "
                f"({leftover} feature(s) left over)"
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = heads_fit
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    @staticmethod
    def _apply(W_T, x):
        # y_i = sum_j (W^T)_{ij} x_j  for every (batch, position)
        return np.einsum("ij,btj->bti", W_T, x)

    def split_heads(self, x):
        B, T, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(B, T, self.num_heads, self.d_k))

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return np.einsum("bhtd->bthd", x).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self._apply(self._W_Q_T, Q))
        k = self.split_heads(self._apply(self._W_K_T, K))
        v = self.split_heads(self._apply(self._W_V_T, V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self._apply(self._W_O_T, self.combine_heads(heads))
        if return_weights:
            return out, weights
        return out
