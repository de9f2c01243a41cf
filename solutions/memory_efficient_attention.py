"""Memory-efficient (flash-style) attention in NumPy: keys in blocks, an online softmax.

Shape legend, used in every docstring and comment below:

    B      batch size
    H      number of heads
    T      query length
    S      key/value length
    d_k    width of one head
    block  keys processed at once (block_size)

Plain attention builds the whole ``(B, H, T, S)`` score matrix. Here the keys
are read ``block`` at a time, and each query row keeps only a running max
``m``, a running sum ``l`` of ``exp(score - m)`` and a running, unnormalized
output ``acc``. When a new block raises the max, what was accumulated so far
is rescaled by ``exp(m_old - m_new)``; at the end ``acc / l`` is exactly the
softmax-weighted sum of the values. Extra memory grows with ``T * block``,
never with ``T * S``.
"""

import numpy as np


def memory_efficient_attention(Q, K, V, block_size=64, causal=False):
    """Scaled dot-product attention computed over blocks of keys.

    Args:
        Q: queries, ``(B, H, T, d_k)``.
        K: keys, ``(B, H, S, d_k)``.
        V: values, ``(B, H, S, d_k)``.
        block_size: number of keys per block; the last block may be shorter.
        causal: mask future keys. The queries are the last ``T`` of the
            ``S`` positions: query ``i`` sits at position ``S - T + i`` and
            sees keys ``0 .. S - T + i``.

    Returns:
        ``out``, ``(B, H, T, d_k)``: equal to
        ``softmax(Q K^T / sqrt(d_k)) V`` (masked when ``causal``), while no
        array of size ``T * S`` is ever allocated.
    """
    ### BEGIN SOLUTION
    # HINT(en): keep three running quantities per query: the max m, the sum l of exponentials and the unnormalised output acc. For each key block, bring l and acc to the new max with one correction factor, add the block's terms, and divide once at the end.
    # HINT(zh): 为每个查询维护三个累计量：当前最大值 m、指数的累计和 l，以及未归一化的累计输出 acc。对每个键块，用同一个修正因子把 l 和 acc 换算到新的最大值，加上这一块的项，最后只做一次除法。
    T, S, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    scale = 1.0 / np.sqrt(d_k)
    running_max = np.full(Q.shape[:-1] + (1,), -np.inf)  # (B, H, T, 1)
    running_sum = np.zeros(Q.shape[:-1] + (1,))  # (B, H, T, 1)
    accumulated = np.zeros(Q.shape)  # (B, H, T, d_k), unnormalized
    query_positions = np.arange(S - T, S)[:, None]  # (T, 1)
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        scores = Q @ np.swapaxes(K[..., start:stop, :], -1, -2) * scale  # (B, H, T, block)
        if causal:
            visible = np.arange(start, stop)[None, :] <= query_positions  # (T, block)
            scores = np.where(visible, scores, -np.inf)
        new_max = np.maximum(running_max, scores.max(axis=-1, keepdims=True))  # (B, H, T, 1)
        # A row that has seen no visible key yet keeps max -inf; shift it by 0 instead of -inf.
        safe_max = np.where(np.isfinite(new_max), new_max, 0.0)
        # Rescale what was summed under the old max to the new one: exp(m_old - m_new) <= 1.
        correction = np.exp(running_max - safe_max)  # (B, H, T, 1)
        probabilities = np.exp(scores - safe_max)  # (B, H, T, block)
        running_sum = running_sum * correction + probabilities.sum(axis=-1, keepdims=True)
        accumulated = accumulated * correction + probabilities @ V[..., start:stop, :]  # (B, H, T, d_k)
        running_max = new_max
    return accumulated / running_sum  # (B, H, T, d_k)
    ### END SOLUTION
