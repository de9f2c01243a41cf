"""Check inputs, the values they should give, and what each mistake would give.

A ``Case`` is one call of one student function: its inputs, the expected
value and the outputs of every buggy twin that differs from it. Public cases
use fixed sizes and a fixed seed and are shipped precomputed (so public
checks need neither ``solutions/`` nor the twins); hidden cases are drawn
from each student's seed with fresh sizes.

Sizes are distinct and non-square (B=2, H=3, T=5, S=7, d_k=4 in public) and
inputs are small random floats, so a swapped axis or a missing scale cannot
hide behind a coincidence of sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

PUBLIC_SEED = 20240613


@dataclass(frozen=True)
class Sizes:
    B: int
    H: int
    T: int
    S: int
    d_k: int

    @property
    def D(self) -> int:
        return self.H * self.d_k


PUBLIC_SIZES = Sizes(B=2, H=3, T=5, S=7, d_k=4)


@dataclass(frozen=True)
class Raised:
    """A call that raises: the exception's type and message."""

    type: str
    message: str


@dataclass
class Case:
    id: str
    function: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    d_model: int | None = None
    heads: int | None = None
    weights: dict | None = None
    expected: object = None
    # [(misconception id, label, value)]; None until first needed (see known_twins)
    twins: list | None = field(default_factory=list)
    # Optional, for exercises other than MultiHeadAttention (None keeps the core's behaviour):
    class_name: str | None = None  # call ``function`` as a method of ``class_name(*init)``
    init: tuple | None = None
    calls: tuple | None = None  # ((path, args, kwargs), ...) on one instance; args None reads an attribute
    call_text: str | None = None  # how feedback names the call, e.g. "masked_softmax(scores, mask)"
    legend: object = None  # shape legend(s) of the value, e.g. "(B, H, T, S)" or a tuple of them
    argument_names: tuple | None = None  # names of ``args`` in feedback
    mutation_id: str | None = None  # the misconception of changing an input in place
    twin_builder: Callable | None = field(default=None, repr=False, compare=False)

    def known_twins(self) -> list:
        """The twins that differ from the expected value, computed on first use.

        Hidden cases defer them: most checks pass, and a passing check never
        needs to know what the mistakes would have returned.
        """
        if self.twins is None:
            self.twins = self.twin_builder(self) if self.twin_builder is not None else []
        return self.twins


def draw_sizes(rng: np.random.Generator) -> Sizes:
    """Distinct sizes, none equal to another, d_k >= 2 so every scale differs."""
    while True:
        B, H = int(rng.integers(2, 4)), int(rng.integers(2, 5))
        T, S, d_k = int(rng.integers(3, 8)), int(rng.integers(3, 9)), int(rng.integers(2, 6))
        values = [B, H, T, S, d_k, H * d_k]
        if len(set(values)) == len(values):
            return Sizes(B, H, T, S, d_k)


def _floats(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return rng.normal(0.0, scale, shape)


def _weights(rng: np.random.Generator, width: int) -> dict:
    return {name: _floats(rng, width, width, scale=1.0 / np.sqrt(width)) for name in ("W_Q", "W_K", "W_V", "W_O")}


def stability_logits(rng: np.random.Generator) -> np.ndarray:
    """Rows with +-1000 inside a row, maxima 1000+ apart, and spans over 1500.

    An unstable softmax overflows, a global-max one underflows to 0/0 in the
    rows far below the top, and a mean-centred one overflows in the row whose
    maximum lies far above its mean.
    """
    rows = np.array([
        [1000.0, 999.0, -1000.0, 0.5, 998.0],
        [-1200.0, -1201.5, -1199.0, -1300.0, -1250.0],
        [800.0, -750.0, 10.0, 799.5, -1.0],
        [900.0, -700.0, -650.0, -720.0, -690.0],  # far above its mean: a mean-centred softmax overflows
        [0.3, -0.2, 0.1, 0.0, -0.4],
    ])
    return rows + rng.uniform(-0.5, 0.5, rows.shape)


def masked_logits(rng: np.random.Generator) -> np.ndarray:
    x = _floats(rng, 3, 6, scale=2.0)
    x[0, [1, 4]] = -np.inf
    x[1, 0] = -np.inf
    x[2, [0, 2, 3, 5]] = -np.inf
    return x


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the core exercise for these sizes, keyed by id."""
    B, H, T, S, d_k, D = sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.D
    weights = _weights(rng, D)
    queries_in, keys_in = _floats(rng, B, T, D), _floats(rng, B, S, D)
    values_in = _floats(rng, B, S, D)
    self_in = _floats(rng, B, T, D)
    same_key = np.repeat(_floats(rng, B, H, 1, d_k), S, axis=2)
    specs = [
        ("softmax/1d", "softmax", (_floats(rng, S + 2, scale=2.0),), {}),
        ("softmax/2d", "softmax", (_floats(rng, T, S, scale=2.0),), {}),
        ("softmax/4d", "softmax", (_floats(rng, B, H, T, S, scale=2.0),), {}),
        ("softmax/square", "softmax", (_floats(rng, T, T, scale=2.0),), {}),
        ("softmax/stability", "softmax", (stability_logits(rng),), {}),
        ("softmax/neg-inf", "softmax", (masked_logits(rng),), {}),
        ("attention/cross", "scaled_dot_product_attention",
         (_floats(rng, B, H, T, d_k), _floats(rng, B, H, S, d_k), _floats(rng, B, H, S, d_k)), {}),
        ("attention/self", "scaled_dot_product_attention",
         (_floats(rng, B, H, T, d_k), _floats(rng, B, H, T, d_k), _floats(rng, B, H, T, d_k)), {}),
        ("attention/identical-keys", "scaled_dot_product_attention",
         (_floats(rng, B, H, T, d_k), same_key, _floats(rng, B, H, S, d_k)), {}),
        ("split/cross", "split_heads", (queries_in,), {}),
        ("split/one", "split_heads", (_floats(rng, 1, 1, D),), {}),
        ("split/long", "split_heads", (_floats(rng, B + 2, T + S, D),), {}),
        ("combine/cross", "combine_heads", (_floats(rng, B, H, T, d_k),), {}),
        ("combine/long", "combine_heads", (_floats(rng, B + 1, H, S + 2, d_k),), {}),
        ("forward/cross", "forward", (queries_in, keys_in, values_in), {}),
        ("forward/cross-weights", "forward", (queries_in, keys_in, values_in), {"return_weights": True}),
        ("forward/self-weights", "forward", (self_in, self_in.copy(), self_in.copy()), {"return_weights": True}),
    ]
    one_head = Case(id=f"{prefix}forward/one-head", function="forward", args=(queries_in, keys_in, values_in),
                    kwargs={"return_weights": True}, d_model=D, heads=1, weights=weights)
    cases = {}
    for name, function, args, kwargs in specs:
        method = function in ("split_heads", "combine_heads", "forward")
        case = Case(id=f"{prefix}{name}", function=function, args=args, kwargs=kwargs,
                    d_model=D if method else None, heads=H if method else None,
                    weights=weights if function == "forward" else None)
        cases[name] = with_expectations(case)
    cases["forward/one-head"] = with_expectations(one_head)
    return cases


def with_expectations(case: Case) -> Case:
    """Fill in the expected value; the twins that differ from it follow on first use."""
    # Imported here: a student release ships precomputed public cases and no twins.
    from grader.assignments import core_twins as twin_module

    with np.errstate(all="ignore"):
        case.expected = twin_module.reference_call(case.function, case.args, case.kwargs, heads=case.heads,
                                                   weights=case.weights)
    case.twins, case.twin_builder = None, _mha_twins
    return case


def _mha_twins(case: Case) -> list:
    from grader.assignments import core_twins as twin_module

    found = []
    for twin in twin_module.twins_for(case.function):
        value = twin_module.run_twin(twin, case.function, case.args, case.kwargs, heads=case.heads,
                                     weights=case.weights)
        if isinstance(value, Exception):
            value = Raised(type(value).__name__, str(value))
        if not same_value(value, case.expected):
            found.append((twin.misconception, twin.label, value))
    return found


def same_value(a, b, *, rtol: float = 1e-4, atol: float = 1e-6) -> bool:
    """Equal structure and values within float32-friendly tolerances (NaN equals NaN)."""
    if isinstance(a, Raised) or isinstance(b, Raised):
        return isinstance(a, Raised) and isinstance(b, Raised) and a == b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(x, y, rtol=rtol, atol=atol) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape:
            return False
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if not np.array_equal(np.isnan(a64), np.isnan(b64)):
            return False
        return bool(np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True))
    return False


def public_cases() -> dict[str, Case]:
    """The public cases, computed (instructor side) from the fixed seed."""
    return build_cases(np.random.default_rng(PUBLIC_SEED), PUBLIC_SIZES, prefix="")


def hidden_cases(seed: int) -> dict[str, Case]:
    """The hidden cases for one student's seed."""
    rng = np.random.default_rng(seed)
    return build_cases(rng, draw_sizes(rng), prefix="hidden:")
