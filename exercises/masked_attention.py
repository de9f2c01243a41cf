"""Masked attention in NumPy: causal masks, padding masks, masked softmax.

Shape legend, used in every docstring and comment below:

    B    batch size
    H    number of heads
    T    query length (seq_q)
    S    key/value length (seq_k)
    d_k  width of one head

A mask is a boolean array that broadcasts against the ``(B, H, T, S)``
scores: ``True`` where a query may attend to a key, ``False`` where it may
not. Masked keys get exactly zero weight; a query that may attend to no key
at all (a fully masked row) gets all-zero weights and a zero output, never
NaN.
"""

import numpy as np


def causal_mask(T, S=None):
    """Which keys each query may see when no token may look ahead.

    Args:
        T: number of queries.
        S: number of keys (default ``T``). The queries are the last ``T`` of
            the ``S`` positions, so query ``i`` sits at position
            ``S - T + i``: with ``S > T`` (a cache of ``S - T`` earlier
            tokens) every query also sees all earlier tokens.

    Returns:
        Boolean ``(T, S)``: ``True`` where key ``j`` is at or before query
        ``i``'s position (the diagonal included: a token sees itself).
    """
    # TODO: implement causal_mask.
    # TODO：实现 causal_mask。
    # Hint: query i sits at position S - T + i; key j is visible when j <= that position (compare np.arange vectors with broadcasting).
    # 提示：查询 i 位于位置 S - T + i；当 j <= 该位置时键 j 可见（用 np.arange 向量广播比较）。
    raise NotImplementedError("causal_mask: not implemented yet / 尚未实现")


def padding_mask(lengths, S):
    """Which keys are real tokens rather than padding.

    Args:
        lengths: integers ``(B,)``, the number of real tokens of each
            sequence; they come first, padding fills the rest up to ``S``.
        S: padded length of the keys.

    Returns:
        Boolean ``(B, 1, 1, S)``, ready to broadcast against ``(B, H, T, S)``
        scores: ``True`` at the real positions ``j < lengths[b]``.
    """
    # TODO: implement padding_mask.
    # TODO：实现 padding_mask。
    # Hint: a key is real when its position is below its sequence's length; give the (B, S) result size-1 axes for the heads and the queries.
    # 提示：当键的位置小于所在序列的长度时，它是真实的词元；再给 (B, S) 的结果补上头和查询两个大小为 1 的轴。
    raise NotImplementedError("padding_mask: not implemented yet / 尚未实现")


def masked_softmax(scores, mask):
    """Softmax over the last axis in which masked entries get zero weight.

    Args:
        scores: real array ``(..., S)``; left unchanged.
        mask: boolean array that broadcasts to ``scores.shape``; ``True``
            where an entry takes part.

    Returns:
        An array of the shape of ``scores``: each row is a softmax over its
        unmasked entries (summing to 1) and exactly 0 at masked entries; a
        row with no unmasked entry is all zeros.
    """
    # TODO: implement masked_softmax.
    # TODO：实现 masked_softmax。
    # Hint: before the softmax, block masked scores with a value whose exponential is 0, in a new array; take the row max over kept entries only, and give a row with nothing kept zeros instead of 0/0.
    # 提示：在 softmax 之前，在一个新数组里用指数恰好为 0 的值屏蔽被遮住的分数；行最大值只在保留的元素上取；一行都没保留时给出全 0，而不是 0/0。
    raise NotImplementedError("masked_softmax: not implemented yet / 尚未实现")


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention restricted by a mask.

    Args:
        Q: queries, ``(B, H, T, d_k)``.
        K: keys, ``(B, H, S, d_k)``.
        V: values, ``(B, H, S, d_k)``.
        mask: ``None`` (every key visible) or a boolean array that
            broadcasts to ``(B, H, T, S)``, e.g. ``causal_mask(T, S)`` or
            ``padding_mask(lengths, S)``, or both combined with ``&``.

    Returns:
        ``(out, weights)``: ``out`` is ``(B, H, T, d_k)``; ``weights`` is
        ``(B, H, T, S)``, zero at masked keys, rows summing to 1 (or all zero
        for a query with no visible key, whose output is then zero).
    """
    # TODO: implement masked_attention.
    # TODO：实现 masked_attention。
    # Hint: scores as in plain attention, then your masked softmax (every key visible when mask is None), then the weighted average of the values.
    # 提示：分数的算法与普通注意力相同，然后用你的 masked_softmax（mask 为 None 时所有键都可见），最后对值求加权平均。
    raise NotImplementedError("masked_attention: not implemented yet / 尚未实现")
