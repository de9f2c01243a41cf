# expect: correct
"""A correct solution in float32 with boolean masks."""

import numpy as np


def softmax(logits):
    x = np.asarray(logits, dtype=np.float32)
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


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
    probs = softmax(logits).astype(np.float64)
    ranks = np.argsort(np.argsort(-probs, axis=-1, kind="stable"), axis=-1)  # rank of each token
    out = np.array(logits, dtype=np.float32)
    for b in range(len(out)):
        ordered = np.sort(probs[b])[::-1]
        n_keep = int(np.searchsorted(np.cumsum(ordered), p * (1 - 1e-12))) + 1
        out[b, ranks[b] >= n_keep] = -np.inf
    return out


def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    x = apply_temperature(logits, temperature)
    if top_k is not None:
        x = top_k_filter(x, top_k)
    if top_p is not None:
        x = top_p_filter(x, top_p)
    return softmax(x)


def sample(probs, uniforms):
    cum = np.cumsum(probs, axis=-1)
    hit = cum > np.asarray(uniforms)[:, None]
    fallback = probs.shape[-1] - 1 - np.argmax((probs > 0)[:, ::-1], axis=-1)
    return np.where(hit.any(-1), hit.argmax(-1), fallback)
