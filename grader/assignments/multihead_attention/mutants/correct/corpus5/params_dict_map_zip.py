# expect: correct
# correct; parameters live in a plain dict behind properties, attention maps over the leading axis with map/zip(*...), heads are glued with np.concatenate
"""Functional-ish multi-head attention: a params dict plus a thin class.

The weights are kept in ``self.params`` (handy for saving with ``np.savez``);
``W_Q`` and friends are properties so the usual attribute access still works.
Attention peels off leading axes one at a time with ``map`` and re-stacks the
results with ``zip(*...)``.
"""

import numpy as np

WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O")


def init_params(d_model, seed=0):
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(d_model)
    # dict comprehension runs in order, so W_Q is drawn first, W_O last
    return {name: rng.normal(0.0, scale, (d_model, d_model)) for name in WEIGHT_NAMES}


def softmax(x):
    x = np.asarray(x)
    shifted = x - x.max(axis=-1)[..., None]
    num = np.exp(shifted)
    return num / num.sum(axis=-1)[..., None]


def scaled_dot_product_attention(Q, K, V):
    if Q.ndim > 2:
        # one call per leading index, then transpose the list of pairs
        outs, maps = zip(*map(scaled_dot_product_attention, Q, K, V))
        return np.stack(outs), np.stack(maps)
    weights = softmax(Q @ K.T / np.sqrt(Q.shape[-1]))
    return weights @ V, weights


def _weight_property(name):
    return property(lambda self: self.params[name],
                    lambda self, value: self.params.__setitem__(name, value))


class MultiHeadAttention:
    W_Q = _weight_property("W_Q")
    W_K = _weight_property("W_K")
    W_V = _weight_property("W_V")
    W_O = _weight_property("W_O")

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.params = init_params(d_model)

    def split_heads(self, x):
        H, dk = self.num_heads, self.d_k
        # per sequence: (T, D) -> (T, H, d_k) -> (H, T, d_k)
        per_seq = map(lambda seq: seq.reshape(seq.shape[0], H, dk).swapaxes(0, 1), x)
        return np.stack(list(per_seq))

    def combine_heads(self, x):
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        p = self.params
        q, k, v = (self.split_heads(inp @ p[w]) for inp, w in zip((Q, K, V), WEIGHT_NAMES))
        context, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(context) @ p["W_O"]
        if return_weights:
            return out, weights
        return out
