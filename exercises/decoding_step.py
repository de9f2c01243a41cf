"""One decoding step of a language model: from next-token logits to a sampled token, in NumPy.

Shape legend, used in every docstring and comment below:

    B    batch size (one row per sequence being generated)
    V    vocabulary size (one logit per token)

A model's last layer gives, for every sequence, a row of V logits for the
next token. A decoding step turns that row into a distribution and draws
one token from it, in a fixed order:

1. **temperature**: divide the logits by ``temperature`` (below 1 sharpens,
   above 1 flattens); temperature 0 means greedy decoding, the largest
   logit only, and is handled without dividing;
2. **top-k**: keep the ``k`` largest logits of each row;
3. **top-p** (nucleus): keep the smallest set of most probable tokens whose
   probabilities add up to at least ``p``;
4. a softmax over what is left, so every row sums to 1 again;
5. **sampling** by the inverse of the cumulative distribution.

A token that is filtered out gets the logit ``-inf``, never ``0``: after the
softmax ``exp(-inf) = 0`` and it can never be drawn.
"""

import numpy as np


def softmax(logits):
    """A numerically stable softmax over the vocabulary.

    Args:
        logits: ``(B, V)`` floats; ``-inf`` marks a token that is ruled out
            (each row keeps at least one finite logit).

    Returns:
        ``(B, V)`` probabilities, each row summing to 1. Logits of +-1000 must
        not overflow: subtract each row's largest logit before ``exp``.
    """
    # TODO: implement softmax.
    # TODO：实现 softmax。
    # Hint: work along the last axis (one row per sequence): subtract each row's maximum with keepdims=True, exponentiate, divide by the row sums.
    # 提示：沿最后一个轴计算（每个序列一行）：用 keepdims=True 减去每行的最大值，取指数，再除以每行之和。
    raise NotImplementedError("softmax: not implemented yet / 尚未实现")


def apply_temperature(logits, temperature):
    """Scale the logits by a temperature.

    Args:
        logits: ``(B, V)`` floats, left unchanged.
        temperature: a float ``>= 0``.

    Returns:
        ``(B, V)``: ``logits / temperature`` when ``temperature > 0``. When
        ``temperature == 0`` (greedy), each row keeps only its largest logit
        (the first one if several are equal) at its own value and every other
        entry becomes ``-inf``; nothing is divided by zero.

    Raises:
        ValueError: ``temperature < 0``.
    """
    # TODO: implement apply_temperature.
    # TODO：实现 apply_temperature。
    # Hint: temperature divides the logits, before any softmax; for temperature 0 do not divide: keep the argmax of each row and set the rest to -inf.
    # 提示：温度是去除 logits 的，而且在任何 softmax 之前；温度为 0 时不要做除法：每行只保留 argmax 位置，其余设为 -inf。
    raise NotImplementedError("apply_temperature: not implemented yet / 尚未实现")


def top_k_filter(logits, k):
    """Keep the ``k`` largest logits of each row.

    Args:
        logits: ``(B, V)`` floats, left unchanged.
        k: an integer ``>= 1``; ``k >= V`` keeps every token.

    Returns:
        ``(B, V)``: a logit stays when it is at least the row's ``k``-th
        largest value, every other entry becomes ``-inf``. Ties rule: every
        token equal to the ``k``-th largest value stays, so a row with ties
        may keep more than ``k`` tokens.

    Raises:
        ValueError: ``k < 1``.
    """
    # TODO: implement top_k_filter.
    # TODO：实现 top_k_filter。
    # Hint: find each row's k-th largest value (np.sort or np.partition along the last axis), then keep the logits >= it and put -inf elsewhere, in a new array.
    # 提示：先求每行第 k 大的值（沿最后一个轴用 np.sort 或 np.partition），再保留不小于它的 logits，其余位置填 -inf，结果放在新数组里。
    raise NotImplementedError("top_k_filter: not implemented yet / 尚未实现")


def top_p_filter(logits, p):
    """Nucleus filtering: keep the most probable tokens until their probability reaches ``p``.

    Args:
        logits: ``(B, V)`` floats (``-inf`` allowed), left unchanged.
        p: a float with ``0 < p <= 1``.

    Returns:
        ``(B, V)``: with the row's tokens ordered from most to least probable
        (``softmax(logits)``; equal probabilities in index order), token j is
        kept when the probabilities of the tokens *before* it add up to less
        than ``p``. So the kept set is the smallest one reaching ``p``, the
        token that crosses ``p`` included, and always at least one token.
        Every other entry becomes ``-inf``.

    Raises:
        ValueError: ``p`` outside ``(0, 1]``.
    """
    # TODO: implement top_p_filter.
    # TODO：实现 top_p_filter。
    # Hint: sort each row's probabilities in descending order, take the cumulative sum, and keep a token while the sum of the tokens before it is below p (that keeps the one that crosses p); scatter the decision back to the original order.
    # 提示：把每行的概率从大到小排序并求累积和；只要某个词元之前的概率和还小于 p 就保留它（这样跨过 p 的那个也会保留）；再把结果放回原来的顺序。
    raise NotImplementedError("top_p_filter: not implemented yet / 尚未实现")


def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    """The distribution one decoding step samples from.

    Args:
        logits: ``(B, V)`` floats, left unchanged.
        temperature: see ``apply_temperature``; 0 is greedy.
        top_k: ``None`` (no top-k) or ``k`` for ``top_k_filter``.
        top_p: ``None`` (no top-p) or ``p`` for ``top_p_filter``.

    Returns:
        ``(B, V)`` probabilities, each row summing to 1: temperature first,
        then top-k, then top-p (on the tempered, top-k-filtered logits), then
        a softmax over what is left. Greedy rows are one-hot.
    """
    # TODO: implement next_token_distribution.
    # TODO：实现 next_token_distribution。
    # Hint: chain the steps on logits in the documented order (temperature, top-k, top-p), and only then take one softmax so the kept tokens share all the probability.
    # 提示：按规定的顺序（温度、top-k、top-p）依次处理 logits，最后只做一次 softmax，让保留下来的词元分掉全部概率。
    raise NotImplementedError("next_token_distribution: not implemented yet / 尚未实现")


def sample(probs, uniforms):
    """Draw one token per row by the inverse of the cumulative distribution.

    To sample with a NumPy generator ``rng``, pass ``uniforms = rng.random(B)``:
    the same seed then always draws the same tokens, which is how the checks
    can grade a random choice.

    Args:
        probs: ``(B, V)`` probabilities, each row summing to 1.
        uniforms: ``(B,)`` floats in ``[0, 1)``, one per row.

    Returns:
        ``(B,)`` integers: row ``b`` draws the first token ``j`` whose
        cumulative probability ``probs[b, 0] + ... + probs[b, j]`` is greater
        than ``uniforms[b]``. A token of probability 0 is never drawn. Should
        rounding leave the last cumulative sum below ``uniforms[b]``, the last
        token of nonzero probability is drawn.
    """
    # TODO: implement sample.
    # TODO：实现 sample。
    # Hint: take the cumulative sum along each row and find, per row, the first index whose cumulative sum is strictly greater than that row's uniform (np.searchsorted with side="right", or a comparison and argmax).
    # 提示：沿每行求累积和，再为每行找出第一个累积和严格大于该行均匀随机数的下标（用 side="right" 的 np.searchsorted，或比较后取 argmax）。
    raise NotImplementedError("sample: not implemented yet / 尚未实现")
