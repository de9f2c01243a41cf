"""The backward pass of attention in NumPy: softmax, scaled dot-product attention, multi-head attention.

Shape legend, used in every docstring and comment below:

    B    batch size
    H    number of heads
    T    query length
    S    key/value length
    D    model width (d_model)
    d_k  width of one head, D // H

Each ``*_backward`` takes the gradient of a scalar loss with respect to a
forward function's output (``dout``: same shape as that output) and returns
the gradients with respect to its inputs (each the shape of its input).
Forward and backward come in pairs, the forward given, the backward to
write; the grader compares every gradient with central-difference numerical
gradients.
"""

import numpy as np


def softmax(x):
    """Numerically stable softmax over the last axis (given)."""
    shifted = x - np.max(x, axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)


def softmax_backward(dweights, weights):
    """Gradient through ``weights = softmax(scores)`` over the last axis.

    Args:
        dweights: ``(..., S)``, gradient of the loss with respect to the weights.
        weights: ``(..., S)``, the softmax's output.

    Returns:
        ``dscores``, ``(..., S)``: each row is the softmax Jacobian (not just
        its diagonal) applied to that row of ``dweights``.
    """
    ### BEGIN SOLUTION
    # HINT(en): the Jacobian of a softmax row is diag(w) - w w^T: every score moves every weight of its row, so the gradient has a term shared by the whole row.
    # HINT(zh): softmax 一行的雅可比矩阵是 diag(w) - w w^T：每个分数都会牵动这一行的每个权重，所以梯度中有一项是整行共享的。
    # Every score moves every weight of its row (they share one normaliser), hence the row sum.
    row_dot = np.sum(dweights * weights, axis=-1, keepdims=True)  # (..., 1)
    return weights * (dweights - row_dot)  # (..., S)
    ### END SOLUTION


def attention_forward(Q, K, V):
    """Scaled dot-product attention (given): ``(out, weights)``.

    Q ``(B, H, T, d_k)``, K and V ``(B, H, S, d_k)``; ``out``
    ``(B, H, T, d_k)``, ``weights`` ``(B, H, T, S)``.
    """
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (B, H, T, S)
    weights = softmax(scores)  # (B, H, T, S)
    return weights @ V, weights


def attention_backward(dout, Q, K, V, weights):
    """Gradients of scaled dot-product attention.

    Args:
        dout: ``(B, H, T, d_k)``, gradient with respect to ``out``.
        Q: ``(B, H, T, d_k)``; K, V: ``(B, H, S, d_k)``, the forward's inputs.
        weights: ``(B, H, T, S)``, the forward's attention weights.

    Returns:
        ``(dQ, dK, dV)``, shaped like ``Q``, ``K`` and ``V``.
    """
    ### BEGIN SOLUTION
    # HINT(en): go back through out = weights @ V, then the softmax, then scores = Q K^T / sqrt(d_k); every gradient has the shape of its variable, and only the last two axes are ever transposed.
    # HINT(zh): 依次反向经过 out = weights @ V、softmax 和 scores = Q K^T / sqrt(d_k)；每个梯度的形状都与对应的变量相同，而且只会转置最后两个轴。
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dV = np.swapaxes(weights, -1, -2) @ dout  # (B, H, S, d_k)
    dweights = dout @ np.swapaxes(V, -1, -2)  # (B, H, T, S)
    dscores = softmax_backward(dweights, weights)  # (B, H, T, S)
    dQ = dscores @ K * scale  # (B, H, T, d_k)
    dK = np.swapaxes(dscores, -1, -2) @ Q * scale  # (B, H, S, d_k)
    return dQ, dK, dV
    ### END SOLUTION


class MultiHeadAttention:
    """Multi-head attention with a backward pass.

    Args:
        d_model: model width D.
        num_heads: number of heads H; must divide D.

    Attributes:
        W_Q, W_K, W_V, W_O: ``(D, D)`` arrays, applied as ``x @ W``.
        dW_Q, dW_K, dW_V, dW_O: their gradients, ``(D, D)`` each, set by
            ``backward``.
    """

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)  # keeps the initial scores in softmax's soft range
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))  # (D, D)
        self.cache = None

    def split_heads(self, x):
        """``(B, T, D)`` -> ``(B, H, T, d_k)`` (given)."""
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        """``(B, H, T, d_k)`` -> ``(B, T, D)`` (given)."""
        batch, heads, length, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)

    def forward(self, Q, K, V):
        """Project, split, attend, combine, project (given); keeps what backward needs.

        Q ``(B, T, D)``, K and V ``(B, S, D)`` -> ``out`` ``(B, T, D)``.
        """
        queries = self.split_heads(Q @ self.W_Q)  # (B, H, T, d_k)
        keys = self.split_heads(K @ self.W_K)  # (B, H, S, d_k)
        values = self.split_heads(V @ self.W_V)  # (B, H, S, d_k)
        heads, weights = attention_forward(queries, keys, values)  # (B, H, T, d_k), (B, H, T, S)
        combined = self.combine_heads(heads)  # (B, T, D)
        self.cache = (Q, K, V, queries, keys, values, weights, combined)
        return combined @ self.W_O

    def backward(self, dout):
        """Gradients of the last ``forward`` call.

        Args:
            dout: ``(B, T, D)``, gradient with respect to ``forward``'s output.

        Returns:
            ``(dQ, dK, dV)``, gradients with respect to the inputs Q
            ``(B, T, D)``, K and V ``(B, S, D)``. Also sets ``dW_Q``,
            ``dW_K``, ``dW_V`` and ``dW_O`` (each ``(D, D)``, summed over
            the batch and the positions).
        """
        ### BEGIN SOLUTION
        # HINT(en): for y = x @ W, dW has W's shape and sums over every batch entry and position, dx has x's shape; go back through W_O, combine_heads (its inverse is split_heads), attention_backward and the three input projections.
        # HINT(zh): 对 y = x @ W，dW 与 W 形状相同，并对所有批次和位置求和，dx 与 x 形状相同；依次反向经过 W_O、combine_heads（它的逆是 split_heads）、attention_backward 以及三个输入投影。
        Q, K, V, queries, keys, values, weights, combined = self.cache
        width = dout.shape[-1]
        self.dW_O = combined.reshape(-1, width).T @ dout.reshape(-1, width)  # (D, D)
        dheads = self.split_heads(dout @ self.W_O.T)  # (B, H, T, d_k)
        dqueries, dkeys, dvalues = attention_backward(dheads, queries, keys, values, weights)
        dqueries = self.combine_heads(dqueries)  # (B, T, D): gradient of Q @ W_Q
        dkeys = self.combine_heads(dkeys)  # (B, S, D): gradient of K @ W_K
        dvalues = self.combine_heads(dvalues)  # (B, S, D): gradient of V @ W_V
        self.dW_Q = Q.reshape(-1, width).T @ dqueries.reshape(-1, width)  # (D, D)
        self.dW_K = K.reshape(-1, width).T @ dkeys.reshape(-1, width)  # (D, D)
        self.dW_V = V.reshape(-1, width).T @ dvalues.reshape(-1, width)  # (D, D)
        return dqueries @ self.W_Q.T, dkeys @ self.W_K.T, dvalues @ self.W_V.T  # (B, T, D), (B, S, D), (B, S, D)
        ### END SOLUTION
