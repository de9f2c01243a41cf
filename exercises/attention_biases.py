"""Attention biases in NumPy: ALiBi slopes and biases, sliding windows, attention with an additive bias.

Shape legend, used in every docstring and comment below:

    B    batch size
    H    number of heads
    T    number of queries (the newest tokens when decoding)
    S    number of keys and values (every token so far)
    d_k  width of one head

Position can enter attention through the scores alone. **ALiBi** (attention
with linear biases) adds ``-m_h * distance`` to the score of a query and a
key in head ``h``: a penalty that grows with how far apart they are, steep in
some heads and gentle in others. A **sliding window** lets each query see
only itself and the ``window - 1`` tokens before it. Both are added to the
logits *before* the softmax: a bias of ``-inf`` is a mask.

Positions: the queries are the last ``T`` of the ``S`` positions, so query
``t`` sits at position ``S - T + t`` (with ``S > T``, a cache of ``S - T``
earlier tokens). A mask is boolean, ``True`` where a query may attend.
"""

import numpy as np


def alibi_slopes(num_heads):
    """The ALiBi slope of each head.

    Args:
        num_heads: number of heads H, at least 1.

    Returns:
        ``(H,)`` floats. When H is a power of two, head ``h`` (from 0) gets
        ``2 ** (-8 * (h + 1) / H)``: a geometric sequence from ``2 ** (-8 / H)``
        down to ``2 ** -8``. Otherwise, as in the ALiBi paper's code: the
        slopes of the largest power of two ``n < H``, followed by every other
        slope of ``2 * n`` heads (the 1st, 3rd, 5th, ...), ``H - n`` of them.
    """
    # TODO: implement alibi_slopes.
    # TODO：实现 alibi_slopes。
    # Hint: write the power-of-two ladder (ratio 2^(-8/n), starting at that ratio) as a helper; for another H, take the ladder of the largest power of two n below H, then slopes 0, 2, 4, ... of the ladder for 2n heads until there are H.
    # 提示：先写出 2 的幂个头的斜率阶梯（公比 2^(-8/n)，首项也是它）；H 不是 2 的幂时，取小于 H 的最大 2 的幂 n 的阶梯，再从 2n 个头的阶梯中取第 0, 2, 4, ... 个，直到凑满 H 个。
    raise NotImplementedError("alibi_slopes: not implemented yet / 尚未实现")


def alibi_bias(num_heads, T, S):
    """The ALiBi bias of every head, query and key.

    Args:
        num_heads: number of heads H.
        T: number of queries, at positions ``S - T .. S - 1``.
        S: number of keys, at positions ``0 .. S - 1``.

    Returns:
        ``(H, T, S)``: ``-alibi_slopes(H)[h] * |(S - T + t) - s|``, a penalty
        for distance in either direction (zero where a query meets its own
        key). Under a causal mask only keys at or before the query count,
        where this is the paper's ``-m (i - j)``; without one, later keys
        are penalised the same way (as bidirectional encoders use ALiBi).
    """
    # TODO: implement alibi_bias.
    # TODO：实现 alibi_bias。
    # Hint: a (T, S) table of distances between the query positions S - T + t and the key positions s (absolute value), times minus each head's slope, with the heads on the first axis.
    # 提示：先算出查询位置 S - T + t 与键位置 s 之间的 (T, S) 距离表（取绝对值），再乘以每个头斜率的相反数，头放在第一个轴上。
    raise NotImplementedError("alibi_bias: not implemented yet / 尚未实现")


def sliding_window_mask(T, S, window):
    """Which keys each query may see with a causal sliding window.

    Args:
        T: number of queries, at positions ``S - T .. S - 1``.
        S: number of keys, at positions ``0 .. S - 1``.
        window: how many keys a query sees at most, itself included; at
            least 1.

    Returns:
        Boolean ``(T, S)``: ``True`` where key ``s`` is the query's own
        position or one of the ``window - 1`` before it, never a later one.
        Rows near the start see fewer keys: nothing comes before position 0.
    """
    # TODO: implement sliding_window_mask.
    # TODO：实现 sliding_window_mask。
    # Hint: with p = S - T + t the query's position, key s is visible when p - window < s <= p: exactly window keys, the query's own among them, and none after it.
    # 提示：设查询的位置为 p = S - T + t，当 p - window < s <= p 时键 s 可见：恰好 window 个键，包括查询自己，且没有它之后的键。
    raise NotImplementedError("sliding_window_mask: not implemented yet / 尚未实现")


def biased_attention(Q, K, V, bias=None, mask=None):
    """Scaled dot-product attention with an additive bias and a mask.

    Args:
        Q: queries, ``(B, H, T, d_k)``.
        K: keys, ``(B, H, S, d_k)``.
        V: values, ``(B, H, S, d_k)``.
        bias: ``None`` or real numbers broadcasting to ``(B, H, T, S)``, e.g.
            ``alibi_bias(H, T, S)`` of shape ``(H, T, S)``; added to the
            scaled scores (it is not scaled by ``1 / sqrt(d_k)``).
        mask: ``None`` (every key visible) or booleans broadcasting to
            ``(B, H, T, S)``, ``True`` where a query may attend; every query
            keeps at least one key.

    Returns:
        ``(B, H, T, d_k)``: ``softmax(Q K^T / sqrt(d_k) + bias)`` over the
        visible keys (exactly zero weight elsewhere), times ``V``.
    """
    # TODO: implement biased_attention.
    # TODO：实现 biased_attention。
    # Hint: the bias joins the logits, after the scaling and before the softmax; masked logits become -inf; subtract each row's maximum before exponentiating so large scores cannot overflow.
    # 提示：偏置加到 logits 上：在缩放之后、softmax 之前；被遮住的 logits 设为 -inf；取指数之前先减去每一行的最大值，分数再大也不会溢出。
    raise NotImplementedError("biased_attention: not implemented yet / 尚未实现")


def alibi_attention(Q, K, V, window=None):
    """Causal attention with ALiBi biases, optionally within a sliding window.

    Args:
        Q: queries, ``(B, H, T, d_k)``, at positions ``S - T .. S - 1``.
        K: keys, ``(B, H, S, d_k)``.
        V: values, ``(B, H, S, d_k)``.
        window: ``None`` for plain causal attention (every key at or before
            the query), or the sliding window's size.

    Returns:
        ``(B, H, T, d_k)``: ``biased_attention`` with the ALiBi bias of the H
        heads and the causal (or sliding-window) mask.
    """
    # TODO: implement alibi_attention.
    # TODO：实现 alibi_attention。
    # Hint: take H, T and S from the shapes; with no window, a window of S keys is plain causal; then pass the ALiBi bias of the H heads and the window's mask to your attention with a bias.
    # 提示：从形状中取出 H、T 和 S；没有窗口时，窗口取 S 个键就是普通的因果掩码；然后把 H 个头的 ALiBi 偏置和窗口的掩码交给你写的带偏置的注意力。
    raise NotImplementedError("alibi_attention: not implemented yet / 尚未实现")
