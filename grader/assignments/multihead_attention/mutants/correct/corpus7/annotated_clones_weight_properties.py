# expect: correct
# Port of "The Annotated Transformer": four cloned projection matrices kept in a list, W_Q..W_O are properties over that list, a generic attention() helper, log-sum-exp softmax.
"""Multi-head attention, ported from the PyTorch "Annotated Transformer" to NumPy.

The original keeps ``self.linears = clones(nn.Linear(d_model, d_model), 4)`` and
zips the first three with (query, key, value).  Here the four "linears" are plain
(D, D) matrices applied as ``x @ W``; ``W_Q``, ``W_K``, ``W_V`` and ``W_O`` are
just names for the four slots of that list.
"""

import copy

import numpy as np


def clones(module, n):
    "Produce N identical layers (here: N independent draws from a factory)."
    if callable(module):
        return [module() for _ in range(n)]
    return [copy.deepcopy(module) for _ in range(n)]


def softmax(x):
    "Softmax over the last dimension, computed as exp(x - logsumexp(x))."
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=-1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))
    return np.exp(x - lse)


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.shape[-1]
    scores = np.matmul(query, np.swapaxes(key, -2, -1)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask == 0, -1e9, scores)
    p_attn = softmax(scores)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return np.matmul(p_attn, value), p_attn


def scaled_dot_product_attention(Q, K, V):
    """(B, H, T, d_k), (B, H, S, d_k), (B, H, S, d_k) -> (out, weights)."""
    return attention(Q, K, V)


class MultiHeadAttention:
    "Take in model size and number of heads."

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model must be a multiple of num_heads "
                             f"(got {d_model} and {num_heads})")
        # We assume d_v always equals d_k
        self.d_k = d_model // num_heads
        self.h = self.num_heads = num_heads
        self.d_model = d_model
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.linears = clones(lambda: rng.normal(0.0, std, (d_model, d_model)), 4)
        self.attn = None

    # the four linears under the names the exercise uses
    def _slot(i):
        def get(self):
            return self.linears[i]

        def put(self, value):
            self.linears[i] = value

        return property(get, put)

    W_Q, W_K, W_V, W_O = _slot(0), _slot(1), _slot(2), _slot(3)
    del _slot

    def split_heads(self, x):
        "(B, T, D) -> (B, H, T, d_k); the .view(nbatches, -1, h, d_k).transpose(1, 2) step."
        nbatches = x.shape[0]
        return x.reshape(nbatches, -1, self.h, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        "(B, H, T, d_k) -> (B, T, D); the .transpose(1, 2).contiguous().view(...) step."
        nbatches = x.shape[0]
        return x.transpose(0, 2, 1, 3).reshape(nbatches, -1, self.h * self.d_k)

    def forward(self, query, key, value, return_weights=False):
        "Implements Figure 2"
        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            self.split_heads(x @ w)
            for w, x in zip(self.linears, (query, key, value))
        ]
        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value)
        # 3) "Concat" using a view and apply a final linear.
        out = self.combine_heads(x) @ self.linears[-1]
        if return_weights:
            return out, self.attn
        return out
