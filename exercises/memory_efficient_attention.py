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
    # TODO: implement memory_efficient_attention.
    # TODO：实现 memory_efficient_attention。
    # Hint: keep m (running max), l (running sum) and acc (running output) per query; for each key block: m_new = max(m, block max), scale l and acc by exp(m - m_new), add exp(scores - m_new) and its product with V; return acc / l.
    # 提示：为每个查询维护 m（当前最大值）、l（当前和）和 acc（当前输出）；对每个键块：m_new = max(m, 块内最大值)，把 l 和 acc 乘以 exp(m - m_new)，再加上 exp(scores - m_new) 及其与 V 的乘积；最后返回 acc / l。
    raise NotImplementedError("memory_efficient_attention: not implemented yet / 尚未实现")
