"""Positions by rotation: sinusoidal tables and rotary embeddings (RoPE), in NumPy.

Shape legend, used in every docstring and comment below:

    B    batch size
    H    number of heads
    T    number of queries (the newest tokens when decoding)
    S    number of keys and values (every token so far)
    D    model width (d_model)
    d_k  width of one head; even, since features are rotated in pairs

Attention alone cannot tell the order of its tokens. Two ways to tell it:

* a **sinusoidal table** added to the token embeddings once, at the input;
* **rotary embeddings**, which turn the queries and keys of every head by an
  angle proportional to their position, so that a score q . k depends only
  on how far apart the two tokens are.

Both use one ladder of frequencies, ``w_i = base ** (-2 i / width)`` for
``i = 0 .. width/2 - 1``: pair 0 turns one radian per position, the last
pair turns slowest.

Pairing convention (this exercise uses the one of the RoFormer paper): pair
``i`` is the two **adjacent** features ``(2i, 2i + 1)``. Some libraries
(GPT-NeoX, Llama in Hugging Face) pair feature ``i`` with ``i + width/2``
instead; that layout is a different model and is graded as a mistake here.
"""

import numpy as np


def attend(queries, keys, values):
    """Softmax attention of every query over every key (given: not graded).

    Args:
        queries: ``(B, H, T, d_k)``.
        keys: ``(B, H, S, d_k)``.
        values: ``(B, H, S, d_k)``.

    Returns:
        ``(B, H, T, d_k)``, each query's softmax-weighted average of the values.
    """
    logits = np.einsum("bhtc,bhsc->bhts", queries, keys) * (1.0 / np.sqrt(queries.shape[-1]))  # (B, H, T, S)
    logits = logits - logits.max(axis=-1, keepdims=True)  # the largest becomes 0: nothing overflows
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)  # rows sum to 1
    return np.einsum("bhts,bhsc->bhtc", probabilities, values)  # (B, H, T, d_k)


def rope_frequencies(d_k, base=10000.0):
    """The turning speed of each pair of features, in radians per position.

    Args:
        d_k: width of the rotated vectors; must be even.
        base: the base of the ladder (10000 in the original papers).

    Returns:
        ``(d_k // 2,)`` floats: ``base ** (-2 i / d_k)`` for pair ``i``, so
        ``1.0`` first, then ever smaller.
    """
    ### BEGIN SOLUTION
    # HINT(en): the exponent runs over the even feature indices 0, 2, 4, ... divided by the full width d_k, with a minus sign: later pairs turn more slowly.
    # HINT(zh): 指数取偶数特征下标 0, 2, 4, ... 除以整个宽度 d_k，并带负号：越往后的对转得越慢。
    if d_k % 2 != 0:
        raise ValueError(f"d_k={d_k} must be even: features are rotated in pairs")
    even_features = np.arange(0, d_k, 2)  # (d_k // 2,): 2i for pair i
    return base ** (-even_features / d_k)  # (d_k // 2,)
    ### END SOLUTION


def sinusoidal_positions(seq_len, d_model):
    """The absolute sinusoidal position table of the original Transformer.

    Args:
        seq_len: number of positions T.
        d_model: model width D; must be even.

    Returns:
        ``(T, D)``: row ``p`` holds ``sin(p * w_i)`` in column ``2i`` and
        ``cos(p * w_i)`` in column ``2i + 1``, with ``w = rope_frequencies(D)``
        (base 10000). Row 0 is ``0, 1, 0, 1, ...``.
    """
    ### BEGIN SOLUTION
    # HINT(en): one angle per (position, pair): an outer product of the positions and rope_frequencies(D); sines go to the even columns and cosines to the odd ones, side by side.
    # HINT(zh): 每个（位置，对）有一个角度：位置与 rope_frequencies(D) 的外积；正弦放在偶数列，余弦放在相邻的奇数列。
    angles = np.outer(np.arange(seq_len), rope_frequencies(d_model))  # (T, D // 2)
    table = np.empty((seq_len, d_model))  # (T, D)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table
    ### END SOLUTION


def apply_rotary(x, positions, base=10000.0):
    """Turn each adjacent pair of features of ``x`` by its position's angle.

    Args:
        x: ``(..., T, d_k)``, e.g. ``(B, H, T, d_k)`` queries or keys; left
            unchanged.
        positions: ``(T,)`` integers, the position of each of the T rows.
        base: the base of ``rope_frequencies``.

    Returns:
        An array of the shape of ``x``. With ``a = positions[t] * w_i``, the
        pair ``(x1, x2) = (x[..., t, 2i], x[..., t, 2i + 1])`` becomes
        ``(x1 cos a - x2 sin a, x1 sin a + x2 cos a)``: a turn by ``+a``
        (counter-clockwise), so position 0 leaves a row as it is. Pairs are
        neighbours, never feature ``i`` with ``i + d_k/2``.
    """
    ### BEGIN SOLUTION
    # HINT(en): angles are (T, d_k/2): positions times rope_frequencies; take the even features and the odd features as the two members of each pair, turn them with cos and sin, and interleave the results back into a new array.
    # HINT(zh): 角度的形状是 (T, d_k/2)：位置乘以 rope_frequencies；偶数特征和奇数特征分别是每一对的两个分量，用 cos 和 sin 旋转后，再交错放回一个新数组。
    angles = np.outer(np.asarray(positions), rope_frequencies(x.shape[-1], base))  # (T, d_k // 2)
    cos, sin = np.cos(angles), np.sin(angles)  # each (T, d_k // 2), broadcast over the leading axes
    first, second = x[..., 0::2], x[..., 1::2]  # (..., T, d_k // 2): features 2i and 2i + 1
    turned = np.empty(x.shape)  # (..., T, d_k), a new array: x stays as it is
    turned[..., 0::2] = first * cos - second * sin
    turned[..., 1::2] = first * sin + second * cos
    return turned
    ### END SOLUTION


def rotary_attention(Q, K, V, offset=0):
    """Attention with rotary embeddings, also for decoding with a cache.

    Args:
        Q: ``(B, H, T, d_k)``, queries of the T tokens at positions
            ``offset .. offset + T - 1`` (not yet rotated).
        K: ``(B, H, S, d_k)``, keys of the tokens at positions ``0 .. S - 1``
            (not yet rotated); when decoding, the cached ones and the new ones.
        V: ``(B, H, S, d_k)``, their values.
        offset: position of the first query; decoding after ``S - T``
            cached tokens passes ``offset = S - T``.

    Returns:
        ``(B, H, T, d_k)``: ``attend`` of the rotated queries over the rotated
        keys and the values as they are (no mask). Query ``t``'s row equals
        row ``offset + t`` of the same call made for all positions at once.
    """
    ### BEGIN SOLUTION
    # HINT(en): position enters the scores only: rotate the queries at offset, offset + 1, ... and the keys at 0, 1, ..., leave the values alone, then use attend.
    # HINT(zh): 位置只进入分数：把查询按 offset, offset + 1, ... 旋转，把键按 0, 1, ... 旋转，值保持不变，然后调用 attend。
    query_positions = offset + np.arange(Q.shape[-2])  # (T,)
    key_positions = np.arange(K.shape[-2])  # (S,)
    return attend(apply_rotary(Q, query_positions), apply_rotary(K, key_positions), V)  # (B, H, T, d_k)
    ### END SOLUTION
