"""Normalisation in a Transformer: LayerNorm, RMSNorm and the pre-norm sub-block, in NumPy.

Shape legend, used in every docstring and comment below:

    B    batch size
    T    number of tokens
    D    model width (the features of one token)
    H    number of heads
    d_k  width of one head, D // H

A normaliser works on each token alone: it takes the D features of one
token (the **last** axis), rescales them to a fixed size, and then lets
learned per-feature weights set the size back.

* **LayerNorm** subtracts the token's mean and divides by its standard
  deviation: ``(x - mean) / sqrt(var + eps)``, with the variance of the D
  features taken as a population (divided by D, not D - 1) and ``eps``
  *inside* the root; then ``* gamma + beta``, scale first.
* **RMSNorm** (Llama, T5) skips the centring: ``x / sqrt(mean(x^2) + eps)``,
  then ``* gamma``; it has no ``beta``.

A **pre-norm** sub-block normalises only what goes *into* the sublayer and
adds the sublayer's output to the raw input: ``x + sublayer(norm(x))``. The
residual stream itself is never normalised inside the block (the original
post-norm Transformer wrote ``norm(x + sublayer(x))`` instead).
"""

import numpy as np


def self_attention(x, W_qkv, W_o, n_heads):
    """Causal multi-head self-attention (given: not graded).

    Args:
        x: ``(B, T, D)`` inputs.
        W_qkv: ``(D, 3 * D)``, the query, key and value projections side by side.
        W_o: ``(D, D)``, the output projection.
        n_heads: H, which divides D.

    Returns:
        ``(B, T, D)``: token ``t`` attends to tokens ``0 .. t``.
    """
    B, T, D = x.shape
    d_k = D // n_heads
    q, k, v = np.split(x @ W_qkv, 3, axis=-1)  # each (B, T, D)
    q, k, v = (part.reshape(B, T, n_heads, d_k).transpose(0, 2, 1, 3) for part in (q, k, v))  # (B, H, T, d_k)
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)  # (B, H, T, T)
    logits = np.where(np.tril(np.ones((T, T), dtype=bool)), logits, -np.inf)  # no token sees a later one
    logits = logits - logits.max(axis=-1, keepdims=True)  # the largest becomes 0: nothing overflows
    weights = np.exp(logits)
    weights /= weights.sum(axis=-1, keepdims=True)  # rows sum to 1
    heads = weights @ v  # (B, H, T, d_k)
    return heads.transpose(0, 2, 1, 3).reshape(B, T, D) @ W_o  # (B, T, D)


def layer_norm(x, gamma, beta, eps=1e-5):
    """LayerNorm over the features of each token.

    Args:
        x: ``(..., D)``, e.g. ``(B, T, D)``; left unchanged.
        gamma: ``(D,)``, the learned scale of each feature.
        beta: ``(D,)``, the learned shift of each feature.
        eps: added to the variance, inside the square root.

    Returns:
        An array of the shape of ``x``: each token's D features minus their
        mean, divided by ``sqrt(var + eps)`` (the population variance, over D),
        then multiplied by ``gamma`` and shifted by ``beta``.
    """
    # TODO: implement layer_norm.
    # TODO：实现 layer_norm。
    # Hint: take the mean and the variance over the last axis only (keepdims=True so they broadcast back), divide by sqrt(variance + eps), then scale by gamma and shift by beta.
    # 提示：只在最后一根轴上求均值和方差（keepdims=True，便于广播回去），除以 sqrt(方差 + eps)，再乘以 gamma、加上 beta。
    raise NotImplementedError("layer_norm: not implemented yet / 尚未实现")


def rms_norm(x, gamma, eps=1e-6):
    """RMSNorm over the features of each token.

    Args:
        x: ``(..., D)``, e.g. ``(B, T, D)``; left unchanged.
        gamma: ``(D,)``, the learned scale of each feature.
        eps: added to the mean square, inside the square root.

    Returns:
        An array of the shape of ``x``: each token's features divided by
        ``sqrt(mean(x^2) + eps)`` over its D features (no mean subtracted),
        then multiplied by ``gamma``.
    """
    # TODO: implement rms_norm.
    # TODO：实现 rms_norm。
    # Hint: no centring here: divide x by the root of its mean square over the last axis (plus eps, inside the root), then scale by gamma.
    # 提示：这里不减均值：用 x 在最后一根轴上的均方（加上 eps，放在根号里）开根号，再用 x 除以它，最后乘以 gamma。
    raise NotImplementedError("rms_norm: not implemented yet / 尚未实现")


def pre_norm_block(x, gamma, beta, W_qkv, W_o, n_heads):
    """The attention sub-block of a pre-norm Transformer.

    Args:
        x: ``(B, T, D)``, the residual stream; left unchanged.
        gamma, beta: ``(D,)``, the weights of the block's LayerNorm.
        W_qkv, W_o, n_heads: the weights of ``self_attention``.

    Returns:
        ``(B, T, D)``: ``x + self_attention(layer_norm(x, gamma, beta), ...)``.
        Only the sublayer's input is normalised; the raw ``x`` is added back.
    """
    # TODO: implement pre_norm_block.
    # TODO：实现 pre_norm_block。
    # Hint: normalise a copy of the input for the sublayer only, run self_attention on it, and add its output to the raw x; nothing is normalised after the addition.
    # 提示：只对送进子层的输入做归一化，对它运行 self_attention，再把输出加到原始的 x 上；相加之后不再归一化。
    raise NotImplementedError("pre_norm_block: not implemented yet / 尚未实现")
