# expect: decode-temperature-misapplied
"""The temperature divides the probabilities, which the final normalisation then undoes."""

import numpy as np


def softmax(logits):
    z = logits - np.max(logits, axis=1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=1, keepdims=True)


def apply_temperature(logits, temperature):
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    if temperature == 0:
        out = np.full_like(logits, -np.inf, dtype=float)
        idx = np.argmax(logits, axis=1)
        out[np.arange(len(logits)), idx] = logits[np.arange(len(logits)), idx]
        return out
    return logits / temperature


def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k must be >= 1")
    k = min(k, logits.shape[1])
    kth = np.partition(logits, -k, axis=1)[:, -k:].min(axis=1, keepdims=True)
    return np.where(logits < kth, -np.inf, logits)


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
    if temperature == 0:
        return softmax(apply_temperature(logits, 0))
    x = logits
    if top_k is not None:
        x = top_k_filter(x, top_k)
    if top_p is not None:
        x = top_p_filter(x, top_p)
    probs = softmax(x) / temperature
    return probs / probs.sum(axis=-1, keepdims=True)


def sample(probs, uniforms):
    cum = np.cumsum(probs, axis=1)
    out = np.empty(len(probs), dtype=np.int64)
    for b in range(len(probs)):
        j = int(np.searchsorted(cum[b], uniforms[b], side="right"))
        if j >= probs.shape[1]:
            j = int(np.flatnonzero(probs[b] > 0)[-1])
        out[b] = j
    return out
