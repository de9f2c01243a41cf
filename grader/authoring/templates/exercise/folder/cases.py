"""Cases and buggy twins of the exercise @NAME@ (``solutions/@NAME@.py``).

Graded: ``attention_scores``. Each twin is the reference with one function
replaced by a catalogued mistake (``misconceptions.toml``); a submission whose
value equals a twin's is diagnosed with that twin's id. Sizes are distinct,
so a swapped axis or a wrong scale cannot hide behind equal sizes.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.twinning import Twin, floats, with_expectations
from grader.grading.case import Case

ASSIGNMENT = "@NAME@"
PUBLIC_SEED = 20250101
FUNCTION = "attention_scores"


# ---- twins ------------------------------------------------------------------------------
def _unscaled(module):
    def attention_scores(Q, K):
        return Q @ np.swapaxes(K, -1, -2)  # (B, H, T, S), no 1 / sqrt(d_k)
    return attention_scores


TWINS: tuple[Twin, ...] = (
    Twin("@ID@-no-scale", "scores not divided by sqrt(d_k)", FUNCTION, _unscaled),
)


# ---- cases --------------------------------------------------------------------------------
def _case(prefix: str, name: str, args: tuple) -> Case:
    case = Case(id=f"{prefix}{name}", function=FUNCTION, args=args, legend="(B, H, T, S)",
                call_text="attention_scores(Q, K)", argument_names=("Q", "K"))
    return with_expectations(case, ASSIGNMENT, TWINS)


def build_cases(rng: np.random.Generator, *, B: int, H: int, T: int, S: int, d_k: int,
                prefix: str) -> dict[str, Case]:
    """Every case of the exercise for these sizes, keyed by name."""
    return {
        "scores/cross": _case(prefix, "scores/cross", (floats(rng, B, H, T, d_k), floats(rng, B, H, S, d_k))),
        "scores/self": _case(prefix, "scores/self", (floats(rng, B, H, T, d_k), floats(rng, B, H, T, d_k))),
    }


def public_cases(seed: int | None = None) -> dict[str, Case]:
    """The public cases: from the fixed seed (shipped), or drawn from ``seed`` in a graded run."""
    rng = np.random.default_rng(PUBLIC_SEED if seed is None else seed)
    return build_cases(rng, B=2, H=3, T=5, S=7, d_k=4, prefix="")


def hidden_cases(seed: int) -> dict[str, Case]:
    """Cases on sizes and values drawn from the student's seed."""
    rng = np.random.default_rng(seed)
    B, H = int(rng.integers(1, 3)), int(rng.integers(2, 4))
    T, d_k = int(rng.integers(3, 7)), int(rng.integers(2, 6))
    S = T + int(rng.integers(1, 4))  # never as many keys as queries
    return build_cases(rng, B=B, H=H, T=T, S=S, d_k=d_k, prefix="hidden:")
