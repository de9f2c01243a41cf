# expect: correct
"""A correct solution in another style: the nucleus from an ascending sort (drop what the least likely tail can spare), greedy via argsort, sampling by counting."""

import numpy as np


def softmax(logits):
    top = np.amax(logits, axis=-1)[..., np.newaxis]
    shifted = np.exp(np.subtract(logits, top))
    return shifted / np.add.reduce(shifted, axis=-1, keepdims=True)


def apply_temperature(logits, temperature):
    if temperature < 0:
        raise ValueError("temperature cannot be negative")
    if temperature > 0:
        return np.true_divide(logits, temperature)
    first = np.argsort(-logits, axis=-1, kind="stable")[:, :1]  # the first largest of each row
    greedy = np.full_like(logits, -np.inf, dtype=np.float64)
    np.put_along_axis(greedy, first, np.take_along_axis(logits, first, axis=-1), axis=-1)
    return greedy


def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k < 1")
    descending = -np.sort(-logits, axis=-1)
    kth = descending[:, min(k, logits.shape[-1]) - 1:min(k, logits.shape[-1])]
    return np.where(logits < kth, -np.inf, logits)


def top_p_filter(logits, p):
    if p <= 0 or p > 1:
        raise ValueError("p outside (0, 1]")
    probs = softmax(logits)
    ascending = np.argsort(probs, axis=-1, kind="stable")[:, ::-1][:, ::-1]  # least likely first
    tail = np.cumsum(np.take_along_axis(probs, ascending, axis=-1), axis=-1)  # a token plus all less likely
    # a token goes when it and everything less likely hold no more than 1 - p
    drop_sorted = tail <= 1.0 - p
    drop_sorted[:, -1] = False  # the most likely token always stays
    drop = np.zeros_like(drop_sorted)
    np.put_along_axis(drop, ascending, drop_sorted, axis=-1)
    return np.where(drop, -np.inf, logits)


def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    z = apply_temperature(np.asarray(logits, dtype=np.float64), temperature)
    z = z if top_k is None else top_k_filter(z, top_k)
    z = z if top_p is None else top_p_filter(z, top_p)
    return softmax(z)


def sample(probs, uniforms):
    cumulative = np.cumsum(probs, axis=-1)
    counts = (cumulative <= np.asarray(uniforms)[:, None]).sum(axis=-1)  # sums not above u
    last = probs.shape[-1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=-1)
    return np.minimum(counts, last).astype(int)
