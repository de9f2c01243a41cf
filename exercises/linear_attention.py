"""Linear (kernelised) attention: a positive feature map instead of the softmax, in NumPy.

Shape legend, used in every docstring and comment below:

    B    batch size
    H    number of heads
    T    number of queries (in the causal form, also the number of keys)
    S    number of keys and values
    d_k  width of one query or key
    d_v  width of one value

Softmax attention weighs key ``s`` for query ``t`` by ``exp(q_t . k_s)``. Linear
attention replaces that kernel by ``phi(q_t) . phi(k_s)``, with a feature map
``phi`` whose values are all positive (here ``elu(x) + 1``). The weights of a
row are then ``phi(q_t) . phi(k_s) / sum_j phi(q_t) . phi(k_j)``: positive and
summing to 1, like a softmax's. Because the product is associative, the keys
and values can be summed first::

    out_t = phi(q_t)^T (sum_s phi(k_s) v_s^T) / (phi(q_t) . sum_s phi(k_s))

a ``(d_k, d_v)`` matrix and a ``(d_k,)`` vector that do not grow with the
sequence: O(S d_k d_v) work instead of O(T S d_k), and no ``(T, S)`` array.
In the causal form token ``t`` sees keys ``0 .. t`` (itself included), so the
two sums become running (prefix) sums; decoding keeps only their last value,
a state of fixed size, and adds one key and value per step.
"""

import numpy as np


def feature_map(x):
    """The feature map ``phi(x) = elu(x) + 1``, applied to every entry.

    Args:
        x: any shape, e.g. ``(B, H, T, d_k)`` queries or keys.

    Returns:
        An array of the shape of ``x``: ``x + 1`` where ``x > 0`` and
        ``exp(x)`` elsewhere; every entry is positive, and ``phi(0) = 1``.
    """
    # TODO: implement feature_map.
    # TODO：实现 feature_map。
    # Hint: elu(x) is x for positive x and exp(x) - 1 otherwise; add 1 to all of it so that every value is above 0.
    # 提示：elu(x) 在 x 为正时等于 x，否则等于 exp(x) - 1；整体再加 1，使每个值都大于 0。
    raise NotImplementedError("feature_map: not implemented yet / 尚未实现")


def linear_attention(Q, K, V):
    """Non-causal linear attention: every query sees every key, in O(S d_k d_v).

    Args:
        Q: ``(B, H, T, d_k)`` queries.
        K: ``(B, H, S, d_k)`` keys.
        V: ``(B, H, S, d_v)`` values.

    Returns:
        ``(B, H, T, d_v)``: row ``t`` is
        ``phi(q_t)^T KV / (phi(q_t) . z)`` with ``KV = sum_s phi(k_s) v_s^T``
        ``(B, H, d_k, d_v)`` and ``z = sum_s phi(k_s)`` ``(B, H, d_k)``, where
        ``phi = feature_map`` goes on both the queries and the keys. No
        ``(T, S)`` array is needed.
    """
    # TODO: implement linear_attention.
    # TODO：实现 linear_attention。
    # Hint: map Q and K with feature_map; sum phi(k) v^T over the keys into one (d_k, d_v) matrix and phi(k) into one (d_k,) vector, then divide phi(q) times the matrix by phi(q) dotted with the vector.
    # 提示：先用 feature_map 映射 Q 和 K；把所有键的 phi(k) v^T 加成一个 (d_k, d_v) 矩阵，把 phi(k) 加成一个 (d_k,) 向量，再用 phi(q) 乘矩阵，除以 phi(q) 与该向量的点积。
    raise NotImplementedError("linear_attention: not implemented yet / 尚未实现")


def causal_linear_attention(Q, K, V):
    """Causal linear attention by prefix sums: query ``t`` sees keys ``0 .. t``.

    Args:
        Q: ``(B, H, T, d_k)`` queries.
        K: ``(B, H, T, d_k)`` keys, one per query (self-attention).
        V: ``(B, H, T, d_v)`` values.

    Returns:
        ``(B, H, T, d_v)``: row ``t`` is ``phi(q_t)^T KV_t / (phi(q_t) . z_t)``
        with the inclusive prefix sums ``KV_t = sum_{s <= t} phi(k_s) v_s^T``
        and ``z_t = sum_{s <= t} phi(k_s)``: the token sees itself, never a
        later one. The last row equals ``linear_attention``'s last row.
    """
    # TODO: implement causal_linear_attention.
    # TODO：实现 causal_linear_attention。
    # Hint: make every phi(k_s) v_s^T as a (T, d_k, d_v) stack and take a running sum along the position axis, including position t itself; the normaliser is the running sum of phi(k) along the same axis.
    # 提示：把每个 phi(k_s) v_s^T 叠成形状 (T, d_k, d_v) 的数组，沿位置轴求累计和，且包含位置 t 本身；归一化项是 phi(k) 沿同一根轴的累计和。
    raise NotImplementedError("causal_linear_attention: not implemented yet / 尚未实现")


def linear_attention_step(q, k, v, state, normaliser):
    """One decoding step of causal linear attention, from its fixed-size state.

    Args:
        q: ``(B, H, d_k)``, the new token's query.
        k: ``(B, H, d_k)``, its key.
        v: ``(B, H, d_v)``, its value.
        state: ``(B, H, d_k, d_v)``, ``sum phi(k_s) v_s^T`` over the earlier
            tokens (zeros before the first one); left unchanged.
        normaliser: ``(B, H, d_k)``, ``sum phi(k_s)`` over the earlier tokens;
            left unchanged.

    Returns:
        ``(out, new_state, new_normaliser)``: first the new token's key and
        value are added (``state + phi(k) v^T``, ``normaliser + phi(k)``), then
        ``out = phi(q)^T new_state / (phi(q) . new_normaliser)``, ``(B, H, d_v)``:
        the token sees itself, as in ``causal_linear_attention``. New arrays;
        the inputs stay as they are.
    """
    # TODO: implement linear_attention_step.
    # TODO：实现 linear_attention_step。
    # Hint: first add phi(k) v^T to a copy of the state and phi(k) to a copy of the normaliser, then read the output from those new sums; return all three.
    # 提示：先把 phi(k) v^T 加到状态的副本上、把 phi(k) 加到归一化项的副本上，再用这两个新的和计算输出；三者一起返回。
    raise NotImplementedError("linear_attention_step: not implemented yet / 尚未实现")
