"""Cases and buggy twins of the KV-cache exercise (``solutions/kv_cache.py``).

Graded: ``KVCache.update`` (``update``) and ``CausalSelfAttention.forward``
(``forward``, with and without the cache). Stateful checks make several calls
on one instance in the worker (``Case.calls``): the grader fills the cache,
decodes step by step, and reads the cache back.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case, Sizes

ASSIGNMENT = "kv_cache"
PUBLIC_SEED = 20240702
CLASS = "CausalSelfAttention"


# ---- twins ------------------------------------------------------------------------------
def _overwrites(module):
    def update(self, keys, values):
        self.keys, self.values = keys, values  # the earlier tokens are lost
        return self.keys, self.values
    return update


def _not_stored(module):
    def update(self, keys, values):
        if self.keys is None:
            return keys, values
        return np.concatenate([self.keys, keys], axis=2), np.concatenate([self.values, values], axis=2)
    return update


def _attend(module, self, queries, keys, values, visible):
    scores = queries @ np.swapaxes(keys, -1, -2) / np.sqrt(self.d_k)
    weights = module.softmax(np.where(visible, scores, -np.inf))
    return self.combine_heads(weights @ values) @ self.W_O


def _projections(self, x):
    return (self.split_heads(x @ self.W_Q), self.split_heads(x @ self.W_K), self.split_heads(x @ self.W_V))


def _forward_with(visibility, *, before_append=False):
    """A forward whose causal rule is ``visibility(T, S)``; optionally attending before the cache grows."""
    def make(module):
        def forward(self, x, use_cache=False):
            queries, keys, values = _projections(self, x)
            if use_cache:
                past_keys, past_values = self.cache.keys, self.cache.values
                keys, values = self.cache.update(keys, values)
                if before_append:  # attends to what was cached before this call only
                    keys, values = past_keys, past_values
                    return _attend(module, self, queries, keys, values, np.ones((x.shape[1], keys.shape[2]), bool))
            T, S = queries.shape[2], keys.shape[2]
            return _attend(module, self, queries, keys, values, visibility(T, S))
        return forward
    return make


def _recomputes_every_position(module):
    reference = module.CausalSelfAttention.forward

    def forward(self, x, use_cache=False):
        if not use_cache:
            return reference(self, x)
        history = getattr(self, "inputs_so_far", None)
        self.inputs_so_far = x if history is None else np.concatenate([history, x], axis=1)
        _, keys, values = _projections(self, x)
        self.cache.update(keys, values)
        return reference(self, self.inputs_so_far)  # (B, S, D): every earlier token attended again
    return forward


TWINS: tuple[Twin, ...] = (
    Twin("kv-cache-not-appended", "the cache is overwritten by the newest tokens", "KVCache.update", _overwrites),
    Twin("kv-cache-not-appended", "returns the concatenation without storing it", "KVCache.update", _not_stored),
    Twin("kv-cache-no-self-attend", "attends to the cache before appending the new tokens", f"{CLASS}.forward",
         _forward_with(lambda T, S: np.arange(S)[None, :] <= np.arange(S - T, S)[:, None], before_append=True)),
    Twin("kv-cache-no-self-attend", "each token sees only earlier tokens", f"{CLASS}.forward",
         _forward_with(lambda T, S: np.arange(S)[None, :] < np.arange(S - T, S)[:, None])),
    Twin("kv-cache-mask-no-offset", "np.tril of (T, S) from the top-left corner", f"{CLASS}.forward",
         _forward_with(lambda T, S: np.tril(np.ones((T, S), dtype=bool)))),
    Twin("kv-cache-recomputes-old", "recomputes the outputs of every cached token", f"{CLASS}.forward",
         _recomputes_every_position),
)


# ---- cases --------------------------------------------------------------------------------
def _weights(rng: np.random.Generator, D: int) -> dict:
    return {name: floats(rng, D, D, scale=1.0 / np.sqrt(D)) for name in ("W_Q", "W_K", "W_V", "W_O")}


def _update_case(prefix: str, name: str, steps: list[tuple[np.ndarray, np.ndarray]]) -> Case:
    case = Case(id=f"{prefix}{name}", function="update", args=(), class_name="KVCache", init=(),
                calls=tuple(("update", step, {}) for step in steps), call_text="KVCache.update(keys, values)",
                legend=("(B, H, S, d_k)", "(B, H, S, d_k)"), argument_names=("keys", "values"))
    return with_expectations(case, ASSIGNMENT, TWINS)


def _forward_case(prefix: str, name: str, sizes: Sizes, weights: dict, calls: tuple, *, args: tuple = ()) -> Case:
    case = Case(id=f"{prefix}{name}", function="forward", args=args, class_name=CLASS, init=(sizes.D, sizes.H),
                weights=weights, calls=calls if calls else None, legend="(B, T, D)", argument_names=("x",),
                call_text="CausalSelfAttention.forward(x, use_cache=True)" if calls
                else "CausalSelfAttention.forward(x)")
    return with_expectations(case, ASSIGNMENT, TWINS)


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the KV-cache exercise for these sizes, keyed by name."""
    B, H, T, S, d_k, D = sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.D
    weights = _weights(rng, D)
    chunks = [(floats(rng, B, H, length, d_k), floats(rng, B, H, length, d_k)) for length in (T, 1, 2)]
    x = floats(rng, B, T + 4, D)  # a prompt of T tokens, then 1, 1 and 2 more
    cut = (0, T, T + 1, T + 2, T + 4)
    decode = tuple(("forward", (x[:, start:stop],), {"use_cache": True}) for start, stop in zip(cut, cut[1:]))
    past_keys, past_values = floats(rng, B, H, S, d_k), floats(rng, B, H, S, d_k)
    new_tokens = floats(rng, B, 2, D)
    cases = {
        "update/first": _update_case(prefix, "update/first", chunks[:1]),
        "update/three": _update_case(prefix, "update/three", chunks),
        "forward/full": _forward_case(prefix, "forward/full", sizes, weights, (), args=(x,)),
        "forward/decode": _forward_case(prefix, "forward/decode", sizes, weights, decode),
        "forward/after-cached": _forward_case(prefix, "forward/after-cached", sizes, weights, (
            ("cache.update", (past_keys, past_values), {}),
            ("forward", (new_tokens[:, :1],), {"use_cache": True}),
            ("forward", (new_tokens[:, 1:],), {"use_cache": True}),
        )),
        "forward/cache-contents": _forward_case(prefix, "forward/cache-contents", sizes, weights, decode[:2] + (
            ("cache.keys", None, None), ("cache.values", None, None))),
    }
    return cases


CASES = CaseSets(build_cases, PUBLIC_SEED)
public_cases, hidden_cases = CASES.public, CASES.hidden
