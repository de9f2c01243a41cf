"""Cases and buggy twins of the grouped-query attention exercise (``solutions/grouped_query_attention.py``).

Graded: ``repeat_kv``, the constructor (``__init__``: divisibility and the
reduced shapes of W_K and W_V) and ``GroupedQueryAttention.forward``. Sizes
always have at least two key/value heads of at least two query heads each
where it matters, so repeating and tiling the heads give different results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case

ASSIGNMENT = "grouped_query_attention"
PUBLIC_SEED = 20240703
CLASS = "GroupedQueryAttention"


@dataclass(frozen=True)
class GroupedSizes:
    B: int
    H_kv: int
    n_rep: int
    T: int
    d_k: int

    @property
    def H(self) -> int:
        return self.H_kv * self.n_rep

    @property
    def D(self) -> int:
        return self.H * self.d_k


PUBLIC_SIZES = GroupedSizes(B=2, H_kv=2, n_rep=3, T=5, d_k=4)


def draw_sizes(rng: np.random.Generator) -> GroupedSizes:
    while True:
        sizes = GroupedSizes(B=int(rng.integers(1, 4)), H_kv=int(rng.integers(2, 4)), n_rep=int(rng.integers(2, 4)),
                             T=int(rng.integers(3, 8)), d_k=int(rng.integers(2, 6)))
        if len({sizes.H, sizes.T, sizes.d_k, sizes.D}) == 4:
            return sizes


# ---- twins ------------------------------------------------------------------------------
def _tiled(module):
    def repeat_kv(x, n_rep):
        return np.tile(x, (1, n_rep, 1, 1))  # heads 0, 1, 0, 1, ...: query head h gets head h % H_kv
    return repeat_kv


TWINS: tuple[Twin, ...] = (
    Twin("gqa-tile-not-repeat", "np.tile over the head axis", "repeat_kv", _tiled),
)


# ---- cases --------------------------------------------------------------------------------
def _weights(rng: np.random.Generator, D: int, kv_width: int) -> dict:
    scale = 1.0 / np.sqrt(D)
    return {"W_Q": floats(rng, D, D, scale=scale), "W_K": floats(rng, D, kv_width, scale=scale),
            "W_V": floats(rng, D, kv_width, scale=scale), "W_O": floats(rng, D, D, scale=scale)}


def _forward(prefix: str, name: str, rng: np.random.Generator, x: np.ndarray, H: int, H_kv: int, d_k: int,
             *, return_weights: bool) -> Case:
    D = H * d_k
    case = Case(id=f"{prefix}{name}", function="forward", args=(x,),
                kwargs={"return_weights": True} if return_weights else {}, class_name=CLASS, init=(D, H, H_kv),
                weights=_weights(rng, D, H_kv * d_k), argument_names=("x",),
                legend=("(B, T, D)", "(B, H, T, T)") if return_weights else "(B, T, D)",
                call_text=f"GroupedQueryAttention({D}, {H}, {H_kv}).forward(x"
                          + (", return_weights=True)" if return_weights else ")"))
    return with_expectations(case, ASSIGNMENT, TWINS)


def build_cases(rng: np.random.Generator, sizes: GroupedSizes, prefix: str) -> dict[str, Case]:
    """Every case of the grouped-query exercise for these sizes, keyed by name."""
    B, H_kv, n_rep, T, d_k, H, D = sizes.B, sizes.H_kv, sizes.n_rep, sizes.T, sizes.d_k, sizes.H, sizes.D
    cases = {}
    for name, args in (("repeat/grouped", (floats(rng, B, H_kv, T, d_k), n_rep)),
                       ("repeat/identity", (floats(rng, B, H, T, d_k), 1)),
                       ("repeat/one-kv-head", (floats(rng, B, 1, T + 1, d_k), H))):
        case = Case(id=f"{prefix}{name}", function="repeat_kv", args=args, call_text="repeat_kv(x, n_rep)",
                    legend="(B, H, T, d_k)", argument_names=("x", "n_rep"))
        cases[name] = with_expectations(case, ASSIGNMENT, TWINS)
    x = floats(rng, B, T, D)
    cases["forward/grouped"] = _forward(prefix, "forward/grouped", rng, x, H, H_kv, d_k, return_weights=False)
    cases["forward/grouped-weights"] = _forward(prefix, "forward/grouped-weights", rng, x, H, H_kv, d_k,
                                                return_weights=True)
    cases["forward/multi-query"] = _forward(prefix, "forward/multi-query", rng, x, H, 1, d_k, return_weights=True)
    cases["forward/multi-head"] = _forward(prefix, "forward/multi-head", rng, x, H, H, d_k, return_weights=True)
    cases["init/shapes"] = Case(
        id=f"{prefix}init/shapes", function="__init__", args=(), class_name=CLASS, init=(D, H, H_kv),
        calls=tuple((name, None, None) for name in ("W_Q", "W_K", "W_V", "W_O")),
        expected=tuple(np.zeros(shape) for shape in ((D, D), (D, H_kv * d_k), (D, H_kv * d_k), (D, D))),
        call_text=f"GroupedQueryAttention({D}, {H}, {H_kv})", legend=("(D, D)", "(D, H_kv * d_k)",
                                                                        "(D, H_kv * d_k)", "(D, D)"))
    return cases


CASES = CaseSets(build_cases, PUBLIC_SEED, PUBLIC_SIZES, draw_sizes)
public_cases, hidden_cases = CASES.public, CASES.hidden
