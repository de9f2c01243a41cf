# expect: decode-top-p-drops-crossing
"""A loop that stops before adding the token that would cross p."""

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
    probs = softmax(logits)
    out = np.full(logits.shape, -np.inf)
    for b in range(probs.shape[0]):
        total = 0.0
        for j in sorted(range(probs.shape[1]), key=lambda j: -probs[b, j]):
            if total > 0 and total + probs[b, j] > p:
                break
            out[b, j] = logits[b, j]
            total += probs[b, j]
    return out


def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    x = apply_temperature(logits, temperature)
    if top_k is not None:
        x = top_k_filter(x, top_k)
    if top_p is not None:
        x = top_p_filter(x, top_p)
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
