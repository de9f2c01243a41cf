"""Grouped-query attention (GQA) in NumPy, with multi-query attention as a special case.

Shape legend, used in every docstring and comment below:

    B     batch size
    H     number of query heads (num_heads)
    H_kv  number of key/value heads (num_kv_heads), dividing H
    T     sequence length (self-attention: queries and keys alike)
    D     model width (d_model)
    d_k   width of one head, D // H

Query heads come in H_kv groups of H // H_kv consecutive heads; every head
of group j shares key/value head j. With H_kv = H this is ordinary
multi-head attention; with H_kv = 1 it is multi-query attention (MQA). The
key and value projections only produce H_kv heads, which shrinks both them
and the KV cache of a decoder by a factor H // H_kv.
"""

import numpy as np


def softmax(x):
    """Numerically stable softmax over the last axis (given)."""
    shifted = x - np.max(x, axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)


def repeat_kv(x, n_rep):
    """Give every query head of a group its key/value head.

    Args:
        x: keys or values, ``(B, H_kv, T, d_k)``.
        n_rep: query heads per key/value head, ``H // H_kv``.

    Returns:
        ``(B, H_kv * n_rep, T, d_k)``: head ``j`` of ``x`` repeated
        ``n_rep`` times in a row, so output head ``h`` is input head
        ``h // n_rep`` (heads 0, 0, 1, 1, ... for ``n_rep`` = 2).
    """
    # TODO: implement repeat_kv.
    # TODO：实现 repeat_kv。
    # Hint: query head h reads key/value head h // n_rep, so the copies of one key/value head must sit next to each other along the head axis (0, 0, 1, 1), not in turns.
    # 提示：查询头 h 读取第 h // n_rep 个键值头，所以同一个键值头的副本必须沿头轴相邻排列（0, 0, 1, 1），而不是轮流出现。
    raise NotImplementedError("repeat_kv: not implemented yet / 尚未实现")


class GroupedQueryAttention:
    """Self-attention with H query heads sharing H_kv key/value heads.

    Args:
        d_model: model width D.
        num_heads: query heads H; must divide D.
        num_kv_heads: key/value heads H_kv; must divide H.

    Attributes:
        W_Q: ``(D, D)``; W_K, W_V: ``(D, H_kv * d_k)``; W_O: ``(D, D)``;
        all applied as ``x @ W``.
    """

    def __init__(self, d_model=8, num_heads=4, num_kv_heads=2):
        # TODO: implement __init__.
        # TODO：实现 __init__。
        # Hint: refuse a width the heads do not divide and a key/value head count that does not divide num_heads; keys and values get num_kv_heads * d_k features, not D.
        # 提示：拒绝不能被头数整除的宽度，以及不能整除 num_heads 的键值头数；键和值只有 num_kv_heads * d_k 个特征，而不是 D 个。
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)  # keeps the initial scores in softmax's soft range
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        # TODO: implement __init__.
        # TODO：实现 __init__。
        # Hint: W_K and W_V map the D input features to one d_k-wide block per key/value head, not to D features.
        # 提示：W_K 和 W_V 把 D 个输入特征映射为每个键值头一块、每块 d_k 个特征，而不是 D 个。
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)

    def split_heads(self, x, heads):
        """``(B, T, heads * d_k)`` -> ``(B, heads, T, d_k)`` (given)."""
        batch, length, _ = x.shape
        return x.reshape(batch, length, heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        """``(B, H, T, d_k)`` -> ``(B, T, D)`` (given)."""
        batch, heads, length, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)

    def forward(self, x, return_weights=False):
        """Grouped-query self-attention.

        Args:
            x: ``(B, T, D)``.
            return_weights: also return the attention weights.

        Returns:
            ``out`` ``(B, T, D)``, or ``(out, weights)`` when
            ``return_weights`` is true, ``weights`` being ``(B, H, T, T)``:
            one map per query head.
        """
        # TODO: implement forward.
        # TODO：实现 forward。
        # Hint: queries split into num_heads heads, keys and values into num_kv_heads heads that are then repeated up to num_heads; the rest is ordinary multi-head attention.
        # 提示：查询拆成 num_heads 个头，键和值拆成 num_kv_heads 个头，再重复扩展到 num_heads 个；其余就是普通的多头注意力。
        raise NotImplementedError("forward: not implemented yet / 尚未实现")
