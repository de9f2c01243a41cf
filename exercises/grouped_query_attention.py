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
    # Hint: np.repeat(x, n_rep, axis=1) keeps each head's copies next to each other; np.tile would cycle through the heads instead.
    # 提示：np.repeat(x, n_rep, axis=1) 会让同一个头的副本相邻排列；np.tile 则会让各个头轮流出现。
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
        # Hint: raise ValueError unless num_heads divides d_model and num_kv_heads divides num_heads; W_K and W_V map D to num_kv_heads * d_k features only.
        # 提示：除非 num_heads 整除 d_model 且 num_kv_heads 整除 num_heads，否则抛出 ValueError；W_K 和 W_V 只把 D 映射到 num_kv_heads * d_k 个特征。
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)  # keeps the initial scores in softmax's soft range
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        # TODO: implement __init__.
        # TODO：实现 __init__。
        # Hint: W_K and W_V have shape (d_model, kv_width) where kv_width = num_kv_heads * d_k.
        # 提示：W_K 和 W_V 的形状是 (d_model, kv_width)，其中 kv_width = num_kv_heads * d_k。
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
        # Hint: split the queries into num_heads heads but the keys and values into num_kv_heads heads, repeat_kv them to num_heads heads, then attend, combine and apply W_O as usual.
        # 提示：把查询拆成 num_heads 个头，而键和值只拆成 num_kv_heads 个头，再用 repeat_kv 扩展到 num_heads 个头，之后像平常一样做注意力、合并各头并乘以 W_O。
        raise NotImplementedError("forward: not implemented yet / 尚未实现")
