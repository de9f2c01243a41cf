"""Cases and buggy twins of the linear-attention exercise (``solutions/linear_attention.py``).

Graded: ``feature_map`` (used by the three others, so a wrong map is named in
all of them, as its root cause), ``linear_attention`` (non-causal),
``causal_linear_attention`` (prefix sums) and ``linear_attention_step`` (one
decoding step from the fixed-size state, returning the output and both new
sums). Values are wider than keys (d_v != d_k) and every size is distinct, so
a sum over the wrong axis or a transposed state cannot hide. Step cases carry
the true state of the tokens before them, so a step's output equals the same
row of the causal pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case
from grader.grading.reference import load_reference

ASSIGNMENT = "linear_attention"
PUBLIC_SEED = 20250312
STEP = "linear_attention_step"


@dataclass(frozen=True)
class Sizes:
    B: int  # batch
    H: int  # heads
    T: int  # queries (and keys, in the causal form)
    S: int  # keys and values of the non-causal form
    d_k: int  # query and key width
    d_v: int  # value width


PUBLIC_SIZES = Sizes(B=2, H=3, T=5, S=7, d_k=4, d_v=6)


def draw_sizes(rng: np.random.Generator) -> Sizes:
    """Distinct sizes, with at least 3 positions so that a prefix differs from the whole."""
    while True:
        B, H = int(rng.integers(2, 4)), int(rng.integers(2, 5))
        T, S = int(rng.integers(3, 8)), int(rng.integers(3, 10))
        d_k, d_v = int(rng.integers(2, 6)), int(rng.integers(2, 8))
        values = [B, H, T, S, d_k, d_v]
        if len(set(values)) == len(values):
            return Sizes(B, H, T, S, d_k, d_v)


# ---- twins ------------------------------------------------------------------------------
def _map(formula):
    def make(module):
        def feature_map(x):
            return formula(np.asarray(x, dtype=float))
        return feature_map
    return make


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


def _identity(x):
    return x


def _phis(module, on_queries: bool, on_keys: bool):
    return (module.feature_map if on_queries else _identity), (module.feature_map if on_keys else _identity)


def _full(on_queries=True, on_keys=True, normalise="phi"):
    """linear_attention with the map on the queries and/or keys; ``normalise``: "phi", "none" or "count"."""
    def make(module):
        map_q, map_k = _phis(module, on_queries, on_keys)

        def linear_attention(Q, K, V):
            phi_q, phi_k = map_q(Q), map_k(K)  # (B, H, T, d_k), (B, H, S, d_k)
            out = np.einsum("bhtk,bhkv->bhtv", phi_q, np.einsum("bhsk,bhsv->bhkv", phi_k, V))  # (B, H, T, d_v)
            if normalise == "phi":
                return out / np.einsum("bhtk,bhk->bht", phi_q, phi_k.sum(axis=-2))[..., None]
            return out / K.shape[-2] if normalise == "count" else out
        return linear_attention
    return make


def _prefix(terms, how):
    """Sums over the position axis 2 of ``terms``: "inclusive", "exclusive" or "all" (every position)."""
    running = np.cumsum(terms, axis=2)
    if how == "exclusive":
        return running - terms  # positions before t only
    if how == "all":
        return np.broadcast_to(terms.sum(axis=2, keepdims=True), terms.shape)
    return running


def _causal(on_queries=True, on_keys=True, numerator="inclusive", normaliser="inclusive", normalise=True,
            kv_axis=2, z_axis=2, epsilon=0.0):
    """causal_linear_attention with each sum chosen (see ``_prefix``), or running along other axes; a small
    ``epsilon`` in the denominator turns the 0 / 0 of an empty exclusive sum into a row of zeros."""
    def make(module):
        map_q, map_k = _phis(module, on_queries, on_keys)

        def causal_linear_attention(Q, K, V):
            phi_q, phi_k = map_q(Q), map_k(K)  # (B, H, T, d_k)
            outer = np.einsum("bhtk,bhtv->bhtkv", phi_k, V)  # (B, H, T, d_k, d_v)
            kv = np.cumsum(outer, axis=kv_axis) if kv_axis != 2 else _prefix(outer, numerator)
            z = np.cumsum(phi_k, axis=z_axis) if z_axis != 2 else _prefix(phi_k, normaliser)
            out = np.einsum("bhtk,bhtkv->bhtv", phi_q, kv)  # (B, H, T, d_v)
            return out / (np.einsum("bhtk,bhtk->bht", phi_q, z)[..., None] + epsilon) if normalise else out
        return causal_linear_attention
    return make


def _step(on_queries=True, on_keys=True, read_state="new", read_normaliser="new", normalise=True):
    """linear_attention_step reading the ``"new"`` or the ``"old"`` (not yet updated) sums."""
    def make(module):
        map_q, map_k = _phis(module, on_queries, on_keys)

        def linear_attention_step(q, k, v, state, normaliser):
            phi_q, phi_k = map_q(q), map_k(k)  # (B, H, d_k)
            new_state = state + np.einsum("bhk,bhv->bhkv", phi_k, v)  # (B, H, d_k, d_v)
            new_normaliser = normaliser + phi_k  # (B, H, d_k)
            kv = new_state if read_state == "new" else state
            z = new_normaliser if read_normaliser == "new" else normaliser
            out = np.einsum("bhk,bhkv->bhv", phi_q, kv)  # (B, H, d_v)
            if normalise:
                out = out / np.einsum("bhk,bhk->bh", phi_q, z)[..., None]
            return out, new_state, new_normaliser
        return linear_attention_step
    return make


MISSING = "linear-attention-feature-map-missing"
UNNORMALISED = "linear-attention-no-normaliser"
CAUSAL, LINEAR = "causal_linear_attention", "linear_attention"

TWINS: tuple[Twin, ...] = (
    Twin("linear-attention-elu-without-one", "elu(x) without the + 1", "feature_map", _map(_elu)),
    Twin("linear-attention-elu-without-one", "+ 1 on the positive branch only", "feature_map",
         _map(lambda x: np.where(x > 0, x + 1.0, np.expm1(np.minimum(x, 0.0))))),
    Twin("linear-attention-elu-without-one", "relu(x) + 1: no exponential below zero", "feature_map",
         _map(lambda x: np.maximum(x, 0.0) + 1.0)),
    Twin(MISSING, "the feature map on the queries only", LINEAR, _full(on_keys=False)),
    Twin(MISSING, "the feature map on the keys only", LINEAR, _full(on_queries=False)),
    Twin(MISSING, "no feature map: raw dot products", LINEAR, _full(on_queries=False, on_keys=False)),
    Twin(UNNORMALISED, "the weighted sum never divided", LINEAR, _full(normalise="none")),
    Twin(UNNORMALISED, "divided by the number of keys", LINEAR, _full(normalise="count")),
    Twin(MISSING, "the feature map on the queries only", CAUSAL, _causal(on_keys=False)),
    Twin(MISSING, "no feature map: raw dot products", CAUSAL, _causal(on_queries=False, on_keys=False)),
    Twin(UNNORMALISED, "the weighted sum never divided", CAUSAL, _causal(normalise=False)),
    Twin("linear-attention-exclusive-prefix", "both running sums exclude the token itself", CAUSAL,
         _causal(numerator="exclusive", normaliser="exclusive")),
    Twin("linear-attention-exclusive-prefix", "both running sums exclude the token, with an epsilon: the first row 0",
         CAUSAL, _causal(numerator="exclusive", normaliser="exclusive", epsilon=1e-9)),
    Twin("linear-attention-exclusive-prefix", "the state's running sum excludes the token itself", CAUSAL,
         _causal(numerator="exclusive")),
    Twin("linear-attention-future-leak", "the normaliser summed over every position", CAUSAL,
         _causal(normaliser="all")),
    Twin("linear-attention-future-leak", "no running sums: every position sees every key", CAUSAL,
         _causal(numerator="all", normaliser="all")),
    Twin("linear-attention-cumsum-axis", "running sums along the last axis (axis=-1)", CAUSAL,
         _causal(kv_axis=4, z_axis=3)),
    Twin("linear-attention-cumsum-axis", "running sums along the heads", CAUSAL, _causal(kv_axis=1, z_axis=1)),
    Twin("linear-attention-cumsum-axis", "the state's running sum along axis=-2 (its key features)", CAUSAL,
         _causal(kv_axis=3)),
    Twin("linear-attention-cumsum-axis", "the normaliser's running sum along the features", CAUSAL,
         _causal(z_axis=3)),
    Twin(MISSING, "the feature map on the queries only", STEP, _step(on_keys=False)),
    Twin(MISSING, "no feature map: raw dot products", STEP, _step(on_queries=False, on_keys=False)),
    Twin(UNNORMALISED, "the weighted sum never divided", STEP, _step(normalise=False)),
    Twin("linear-attention-step-reads-before-update", "the output read from the sums before the new token", STEP,
         _step(read_state="old", read_normaliser="old")),
    Twin("linear-attention-step-reads-before-update", "the old state over the new normaliser", STEP,
         _step(read_state="old")),
    Twin("linear-attention-step-reads-before-update", "the new state over the old normaliser", STEP,
         _step(read_normaliser="old")),
)

CALL_TEXT = {
    "feature_map": "feature_map(x)",
    LINEAR: "linear_attention(Q, K, V)",
    CAUSAL: "causal_linear_attention(Q, K, V)",
    STEP: "linear_attention_step(q, k, v, state, normaliser)",
}
LEGENDS = {
    "feature_map": "x.shape",
    LINEAR: "(B, H, T, d_v)",
    CAUSAL: "(B, H, T, d_v)",
    STEP: ("(B, H, d_v)", "(B, H, d_k, d_v)", "(B, H, d_k)"),
}
ARGUMENT_NAMES = {
    "feature_map": ("x",), LINEAR: ("Q", "K", "V"), CAUSAL: ("Q", "K", "V"),
    STEP: ("q", "k", "v", "state", "normaliser"),
}


# ---- cases --------------------------------------------------------------------------------
def _case(name: str, prefix: str, function: str, args: tuple) -> Case:
    case = Case(id=f"{prefix}{name}", function=function, args=args, call_text=CALL_TEXT[function],
                legend=LEGENDS[function], argument_names=ARGUMENT_NAMES[function], exercise=ASSIGNMENT,
                mutation_id="linear-attention-step-in-place" if function == STEP else None,
                output_names=("out", "new_state", "new_normaliser") if function == STEP else None)
    return with_expectations(case, ASSIGNMENT, TWINS)


def sums_before(K: np.ndarray, V: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The true state and normaliser of the tokens 0 .. t - 1: (B, H, d_k, d_v) and (B, H, d_k)."""
    phi_k = load_reference(ASSIGNMENT).feature_map(K[:, :, :t])  # (B, H, t, d_k)
    return np.einsum("bhtk,bhtv->bhkv", phi_k, V[:, :, :t]), phi_k.sum(axis=2)


def _later_tokens_changed(rng: np.random.Generator, x: np.ndarray, keep: int) -> np.ndarray:
    changed = np.array(x, copy=True)
    changed[:, :, keep:] = floats(rng, *changed[:, :, keep:].shape, scale=3.0)  # only positions >= keep
    return changed


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the linear-attention exercise for these sizes, keyed by name."""
    B, H, T, S, d_k, d_v = sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.d_v
    Q, K, V = floats(rng, B, H, T, d_k), floats(rng, B, H, S, d_k), floats(rng, B, H, S, d_v)
    one_value = np.broadcast_to(floats(rng, B, H, 1, d_v), (B, H, S, d_v)).copy()  # every key's value alike
    long = T + S  # a longer sequence for the causal form and the steps
    Qc, Kc, Vc = floats(rng, B, H, long, d_k), floats(rng, B, H, long, d_k), floats(rng, B, H, long, d_v)
    keep = T // 2 + 1
    middle = int(rng.integers(2, long - 1))  # a step with a few tokens before it and a few after
    state, normaliser = sums_before(Kc, Vc, middle)
    no_state, no_normaliser = np.zeros((B, H, d_k, d_v)), np.zeros((B, H, d_k))
    grid = np.linspace(-4.0, 4.0, 3 * d_k + 1).reshape(1, -1)  # (1, 3 d_k + 1): negatives, 0 and positives
    specs = [
        ("feature/grid", "feature_map", (grid,)),
        ("feature/heads", "feature_map", (floats(rng, B, H, T, d_k, scale=2.0),)),
        ("feature/far", "feature_map", (np.array([[-800.0, -40.0, -1e-3, 0.0, 1e-3, 40.0, 800.0]]),)),
        ("full/cross", LINEAR, (Q, K, V)),
        ("full/self", LINEAR, (Q, floats(rng, B, H, T, d_k), floats(rng, B, H, T, d_v))),
        ("full/one-value", LINEAR, (Q, K, one_value)),
        ("full/wide-inputs", LINEAR, (floats(rng, B, H, T, d_k, scale=4.0), floats(rng, B, H, S, d_k, scale=4.0), V)),
        ("causal/self", CAUSAL, (Qc[:, :, :T], Kc[:, :, :T], Vc[:, :, :T])),
        ("causal/later-changed", CAUSAL, (Qc[:, :, :T], _later_tokens_changed(rng, Kc[:, :, :T], keep),
                                          _later_tokens_changed(rng, Vc[:, :, :T], keep))),
        ("causal/long", CAUSAL, (Qc, Kc, Vc)),
        ("step/first", STEP, (Qc[:, :, 0], Kc[:, :, 0], Vc[:, :, 0], no_state, no_normaliser)),
        ("step/middle", STEP, (Qc[:, :, middle], Kc[:, :, middle], Vc[:, :, middle], state, normaliser)),
    ]
    return {name: _case(name, prefix, function, args) for name, function, args in specs}


CASES = CaseSets(build_cases, PUBLIC_SEED, public_sizes=PUBLIC_SIZES, draw=draw_sizes)
public_cases, hidden_cases = CASES.public, CASES.hidden
