# expect: decode-filter-zero
"""Both filters zero the dropped logits of a copy."""

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
    out = np.array(logits, dtype=float)
    if k >= out.shape[1]:
        return out
    for row in out:
        row[row < np.sort(row)[-k]] = 0
    return out


def top_p_filter(logits, p):
    probs = softmax(logits)
    out = np.array(logits, dtype=float)
    for b, row in enumerate(probs):
        order = np.argsort(-row, kind="stable")
        before = np.concatenate([[0.0], np.cumsum(row[order])[:-1]])
        out[b, order[before >= p]] = 0
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
