# expect: correct
"""A correct solution: greedy as a one-hot mask, top-k by argpartition, top-p by a ranked mask."""

import numpy as np


def softmax(logits):
    z = logits - np.max(logits, axis=1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=1, keepdims=True)


def apply_temperature(logits, temperature):
    if temperature < 0:
        raise ValueError("negative temperature")
    if temperature:
        return logits * (1.0 / temperature)
    first = np.eye(logits.shape[-1], dtype=bool)[np.argmax(logits, axis=-1)]
    return np.where(first, logits, -np.inf)


def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k must be >= 1")
    if k >= logits.shape[-1]:
        return np.copy(logits)
    idx = np.argpartition(logits, -k, axis=-1)[..., -k:]
    kth = np.take_along_axis(logits, idx, axis=-1).min(axis=-1, keepdims=True)
    return np.where(logits >= kth, logits, -np.inf)


def top_p_filter(logits, p):
    if not 0 < p <= 1:
        raise ValueError("p must be in (0, 1]")
    probs = softmax(logits)
    order = np.argsort(-probs, axis=1, kind="stable")
    sorted_probs = np.take_along_axis(probs, order, axis=1)
    cum = np.cumsum(sorted_probs, axis=1)
    keep_sorted = (cum - sorted_probs) < p
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=1)
    return np.where(keep, logits, -np.inf)


def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    steps = [lambda x: apply_temperature(x, temperature)]
    if top_k:
        steps.append(lambda x: top_k_filter(x, top_k))
    if top_p:
        steps.append(lambda x: top_p_filter(x, top_p))
    x = logits
    for step in steps:
        x = step(x)
    return softmax(x)


def sample(probs, uniforms):
    cum = np.cumsum(probs, axis=1)
    out = np.empty(len(probs), dtype=np.int64)
    for b in range(len(probs)):
        j = int(np.searchsorted(cum[b], uniforms[b], side="right"))
        if j >= probs.shape[1]:
            j = int(np.flatnonzero(probs[b] > 0)[-1])
        out[b] = j
    return out
