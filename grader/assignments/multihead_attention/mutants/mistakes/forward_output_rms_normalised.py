# expect: mha-adds-layer-norm
# forward's output is divided by its root mean square over the model width (a post-norm RMSNorm without a gain).
"""Multi-head attention in NumPy: softmax, scaled dot-product attention, splitting and combining heads.

Shape legend, used in every docstring and comment below:

    B    batch size
    H    number of heads
    T    query length (seq_q)
    S    key/value length (seq_k)
    D    model width (d_model)
    d_k  width of one head, D // H

Everything is plain NumPy. Matrices are applied on the right (``x @ W``), so a
projection maps a ``(B, T, D)`` array to another ``(B, T, D)`` array.
"""

import numpy as np


def softmax(x):
    """Numerically stable softmax over the last axis.

    Args:
        x: array of any shape ``(..., N)`` with real entries; ``-inf`` entries
            are allowed as long as a row has at least one finite entry.

    Returns:
        An array of the same shape whose rows (last axis) are non-negative and
        sum to 1. The input is left unchanged.
    """
    # Shifting a row by a constant leaves softmax unchanged; shifting by the
    # row's own max makes the largest exponent exp(0) = 1, so nothing overflows
    # and at least one term of every row's sum is 1 (no 0/0).
    shifted = x - np.max(x, axis=-1, keepdims=True)  # (..., N)
    exponentials = np.exp(shifted)  # (..., N)
    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    """Attention of every query over every key, per batch entry and head.

    Args:
        Q: queries, ``(B, H, T, d_k)``.
        K: keys, ``(B, H, S, d_k)``.
        V: values, ``(B, H, S, d_k)``.

    Returns:
        ``(out, weights)``: ``out`` is ``(B, H, T, d_k)``, the weighted sum of
        the values for each query; ``weights`` is ``(B, H, T, S)``, the softmax
        of ``Q K^T / sqrt(d_k)`` over the keys (each row sums to 1).
    """
    d_k = Q.shape[-1]
    # Dividing by sqrt(d_k) keeps the scores' variance near 1 whatever the head
    # width, so the softmax does not saturate into a one-hot row.
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)  # (B, H, T, S), rows sum to 1 over S
    out = weights @ V  # (B, H, T, d_k)
    return out, weights


class MultiHeadAttention:
    """Multi-head attention with four ``(D, D)`` projection matrices.

    Args:
        d_model: model width D.
        num_heads: number of heads H; must divide D.

    Attributes:
        W_Q, W_K, W_V, W_O: ``(D, D)`` arrays, applied as ``x @ W``.
        num_heads: H.
        d_k: D // H, the width of one head.
    """

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}"
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        # Small random weights keep the initial scores in softmax's soft range.
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)

    def split_heads(self, x):
        """Give each head its own contiguous block of features.

        Args:
            x: ``(B, T, D)``.

        Returns:
            ``(B, H, T, d_k)``, where head ``i`` holds features
            ``i*d_k:(i+1)*d_k`` of every position.
        """
        batch, length, _ = x.shape
        x = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, T, H, d_k)
        return x.transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x):
        """Undo ``split_heads``: concatenate the heads' features again.

        Args:
            x: ``(B, H, T, d_k)``.

        Returns:
            ``(B, T, D)``, head ``i`` in features ``i*d_k:(i+1)*d_k``.
        """
        batch, heads, length, d_k = x.shape
        x = x.transpose(0, 2, 1, 3)  # (B, T, H, d_k)
        return x.reshape(batch, length, heads * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        """Project, split into heads, attend, combine, project the output.

        Args:
            Q: query inputs, ``(B, T, D)``.
            K: key inputs, ``(B, S, D)``.
            V: value inputs, ``(B, S, D)``; K and V share their length S.
            return_weights: also return the attention weights.

        Returns:
            ``out``, ``(B, T, D)``; or ``(out, weights)`` when
            ``return_weights`` is true, ``weights`` being ``(B, H, T, S)``
            (one map per head, not averaged).
        """
        queries = self.split_heads(Q @ self.W_Q)  # (B, H, T, d_k)
        keys = self.split_heads(K @ self.W_K)  # (B, H, S, d_k)
        values = self.split_heads(V @ self.W_V)  # (B, H, S, d_k)
        heads, weights = scaled_dot_product_attention(queries, keys, values)
        out = self.combine_heads(heads) @ self.W_O  # (B, T, D)
        out = out / np.sqrt((out ** 2).mean(axis=-1, keepdims=True) + 1e-6)
        if return_weights:
            return out, weights  # weights: (B, H, T, S)
        return out
