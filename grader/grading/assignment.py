"""The exercises the grader knows, and what it needs to grade each one."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from grader.errors import UsageError
from grader.paths import SUITES_DIR


@dataclass(frozen=True)
class Assignment:
    name: str
    functions: tuple[str, ...]  # graded functions, in the order the computation uses them
    upstream: dict  # function -> the graded functions it calls
    build_hidden_cases: Callable[[int], dict]  # seed -> cases (instructor side)

    @property
    def suites_dir(self) -> Path:
        return SUITES_DIR / self.name

    @property
    def public_cases_file(self) -> Path:
        return self.suites_dir / "public_cases.npz"

    @functools.cached_property
    def _public(self) -> dict:
        from grader.grading.store import load_cases

        return load_cases(self.public_cases_file)

    def public_cases(self) -> dict:
        """The shipped public cases (fixed inputs: a student's instant check)."""
        return self._public

    def drawn_public_cases(self, seed: int) -> dict:
        """The public checks' cases with inputs drawn from ``seed`` (instructor side: graded runs)."""
        import importlib

        return importlib.import_module(f"grader.assignments.{self.name}").public_cases(seed)


def _hidden(name: str, seed: int) -> dict:
    """The hidden cases of exercise ``name`` for one seed, from ``grader/assignments/<name>.py``."""
    import importlib

    return importlib.import_module(f"grader.assignments.{name}").hidden_cases(seed)


ASSIGNMENTS: dict[str, Assignment] = {
    "multihead_attention": Assignment(
        name="multihead_attention",
        functions=("softmax", "scaled_dot_product_attention", "split_heads", "combine_heads", "__init__", "forward"),
        upstream={
            "scaled_dot_product_attention": ("softmax",),
            "forward": ("softmax", "scaled_dot_product_attention", "split_heads", "combine_heads"),
        },
        build_hidden_cases=functools.partial(_hidden, "multihead_attention"),
    ),
    "masked_attention": Assignment(
        name="masked_attention",
        functions=("causal_mask", "padding_mask", "masked_softmax", "masked_attention"),
        upstream={"masked_attention": ("masked_softmax",)},
        build_hidden_cases=functools.partial(_hidden, "masked_attention"),
    ),
    "kv_cache": Assignment(
        name="kv_cache",
        functions=("update", "forward"),
        upstream={"forward": ("update",)},
        build_hidden_cases=functools.partial(_hidden, "kv_cache"),
    ),
    "grouped_query_attention": Assignment(
        name="grouped_query_attention",
        functions=("repeat_kv", "__init__", "forward"),
        upstream={"forward": ("repeat_kv",)},
        build_hidden_cases=functools.partial(_hidden, "grouped_query_attention"),
    ),
    "memory_efficient_attention": Assignment(
        name="memory_efficient_attention",
        functions=("memory_efficient_attention",),
        upstream={},
        build_hidden_cases=functools.partial(_hidden, "memory_efficient_attention"),
    ),
    "attention_backward": Assignment(
        name="attention_backward",
        functions=("softmax_backward", "attention_backward", "backward"),
        upstream={"attention_backward": ("softmax_backward",), "backward": ("softmax_backward", "attention_backward")},
        build_hidden_cases=functools.partial(_hidden, "attention_backward"),
    ),
}


def get_assignment(name: str) -> Assignment:
    try:
        return ASSIGNMENTS[name]
    except KeyError:
        known = ", ".join(sorted(ASSIGNMENTS))
        raise UsageError(f"unknown assignment {name!r}; choose one of: {known}") from None
