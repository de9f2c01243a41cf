"""Incremental decoding with a key/value cache, in NumPy.

Shape legend, used in every docstring and comment below:

    B    batch size
    H    number of heads
    T    number of new tokens in one call (1 when decoding token by token)
    S    number of cached tokens after the call (earlier ones plus the T new)
    D    model width (d_model)
    d_k  width of one head, D // H

A decoder generates one token at a time. The keys and values of earlier
tokens never change, so instead of projecting the whole prefix again at
every step, each call projects only its new tokens, appends their keys and
values to a cache, and lets the new queries attend over everything cached.
Run token by token, the outputs equal those of one causal forward pass over
the whole sequence.
"""

import numpy as np


def softmax(x):
    """Numerically stable softmax over the last axis (given)."""
    shifted = x - np.max(x, axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)


class KVCache:
    """The projected keys and values of every token seen so far.

    Attributes:
        keys: ``None`` while empty, then ``(B, H, S, d_k)``.
        values: ``None`` while empty, then ``(B, H, S, d_k)``.
    """

    def __init__(self):
        self.keys = None
        self.values = None

    def __len__(self):
        """S, the number of cached tokens."""
        return 0 if self.keys is None else self.keys.shape[2]

    def update(self, keys, values):
        """Append the keys and values of new tokens; return everything cached.

        Args:
            keys: ``(B, H, T, d_k)``, the new tokens' keys.
            values: ``(B, H, T, d_k)``, their values.

        Returns:
            ``(keys, values)``, each ``(B, H, S, d_k)``: the earlier tokens
            first, then the new ones (S = previous S + T). The cache keeps
            them for the next call.
        """
        # TODO: implement update.
        # TODO：实现 update。
        # Hint: on the first call store the new keys and values; afterwards join them after the stored ones along the sequence axis, and keep the result on self before returning it.
        # 提示：第一次调用时直接保存新的键和值；之后沿序列轴把它们接在已保存的后面，并在返回之前把结果存回 self。
        raise NotImplementedError("update: not implemented yet / 尚未实现")


class CausalSelfAttention:
    """Causal multi-head self-attention that can decode with a KV cache.

    Args:
        d_model: model width D.
        num_heads: number of heads H; must divide D.

    Attributes:
        W_Q, W_K, W_V, W_O: ``(D, D)`` arrays, applied as ``x @ W``.
        cache: a ``KVCache``, used by ``forward(x, use_cache=True)``.
    """

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)  # keeps the initial scores in softmax's soft range
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.cache = KVCache()

    def reset_cache(self):
        """Forget every cached token (start a new sequence)."""
        self.cache = KVCache()

    def split_heads(self, x):
        """``(B, T, D)`` -> ``(B, H, T, d_k)`` (given)."""
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        """``(B, H, T, d_k)`` -> ``(B, T, D)`` (given)."""
        batch, heads, length, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)

    def forward(self, x, use_cache=False):
        """Causal self-attention of ``x``, optionally continuing from the cache.

        Args:
            x: ``(B, T, D)``. Without the cache, the whole sequence. With
                ``use_cache=True``, the T newest tokens: the cache already
                holds the ``S - T`` tokens before them.
            use_cache: append the new keys and values to ``self.cache`` and
                attend over everything cached.

        Returns:
            ``(B, T, D)``, the outputs of the new tokens only. Token ``i`` of
            ``x`` sits at position ``S - T + i`` and attends to every cached
            token up to and including itself.
        """
        # TODO: implement forward.
        # TODO：实现 forward。
        # Hint: project the new tokens only; with the cache, their keys and values go in before attending; new token i sits at position S - T + i and sees every key up to it, itself included.
        # 提示：只对新词元做投影；使用缓存时，在做注意力之前先把它们的键和值放进缓存；第 i 个新词元位于位置 S - T + i，能看到它之前直到它自己的所有键。
        raise NotImplementedError("forward: not implemented yet / 尚未实现")
