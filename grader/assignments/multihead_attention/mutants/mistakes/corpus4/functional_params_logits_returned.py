# expect: combine-heads-no-transpose, mha-wrong-weights-returned
# Two mistakes: combine_heads reshapes (B, H, T, d_k) straight to (B, T, D) through a module function, and forward hands back the cached pre-softmax logits as the weights.
"""Multi-head attention in a functional style: pure functions over a parameter dict.

init_params, split, merge and attend are module-level functions; attend returns
a cache dict of intermediate arrays. The class only stores the parameters, exposes
them as attributes, and delegates to the functions.
"""

import numpy as np


def init_params(d_model, seed=0):
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(d_model)
    return {name: rng.normal(0.0, scale, (d_model, d_model)) for name in ("W_Q", "W_K", "W_V", "W_O")}


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def attend(q, k, v):
    """Attention with its intermediates; returns (out, cache)."""
    logits = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, H, T, S)
    probs = softmax(logits)
    return probs @ v, {"logits": logits, "probs": probs}


def scaled_dot_product_attention(Q, K, V):
    out, cache = attend(Q, K, V)
    return out, cache["probs"]


def split(x, num_heads):
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, d // num_heads).transpose(0, 2, 1, 3)  # (B, H, T, d_k)


def merge(x):
    b, h, t, d_k = x.shape
    return x.reshape(b, t, h * d_k)  # (B, T, D)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.__dict__.update(init_params(d_model))

    @property
    def params(self):
        return {name: getattr(self, name) for name in ("W_Q", "W_K", "W_V", "W_O")}

    def split_heads(self, x):
        return split(x, self.num_heads)

    def combine_heads(self, x):
        return merge(x)

    def forward(self, Q, K, V, return_weights=False):
        p = self.params
        q = split(Q @ p["W_Q"], self.num_heads)
        k = split(K @ p["W_K"], self.num_heads)
        v = split(V @ p["W_V"], self.num_heads)
        heads, cache = attend(q, k, v)
        out = merge(heads) @ p["W_O"]
        if return_weights:
            return out, cache["logits"]
        return out
