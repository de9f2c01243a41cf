"""The scores of scaled dot-product attention in NumPy (the template exercise: make it yours).

Shape legend, used in every docstring and comment below:

    B      batch size
    H      number of heads
    T      query length
    S      key length
    d_k    width of one head

Every query is compared with every key; dividing by ``sqrt(d_k)`` keeps the
scores' spread independent of the width, so the softmax that follows is not
pushed into saturation.
"""

import numpy as np


def attention_scores(Q, K):
    """The scaled scores of every query against every key.

    Args:
        Q: queries, ``(B, H, T, d_k)``.
        K: keys, ``(B, H, S, d_k)``.

    Returns:
        ``scores``, ``(B, H, T, S)``: ``Q K^T / sqrt(d_k)``.
    """
    ### BEGIN SOLUTION
    # HINT(en): multiply the queries by the keys with their last two axes swapped, then divide by the square root of the head width.
    # HINT(zh): 把查询与交换了最后两根轴的键相乘，再除以单个头宽度的平方根。
    d_k = Q.shape[-1]
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (B, H, T, S)
    ### END SOLUTION
