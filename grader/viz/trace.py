"""A trace of the reference forward pass: every stage as a named array.

The pictures of ``mha viz`` and ``mha demo`` are drawn from a trace, and a
trace exports to JSON or NPZ, so tests can check the numbers behind a figure
instead of its pixels. The stages are computed with the reference module's own
pieces (``split_heads``, ``softmax``, ``combine_heads``) and then compared with
its ``forward``, so a trace can never drift from what the reference computes.

Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key length,
``D`` model width, ``d_k = D // H``. Self-attention traces have ``S == T``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from grader.errors import ConfigError, UsageError
from grader.grading.reference import load_reference
from grader.viz.embedding import WEIGHT_NAMES, embed, init_weights, tokenize

SCHEMA_VERSION = 1

# Stage name -> its axes, in the order the forward pass produces them.
STAGES: dict[str, tuple[str, ...]] = {
    "inputs": ("B", "T", "D"),
    "queries": ("B", "T", "D"),
    "keys": ("B", "S", "D"),
    "values": ("B", "S", "D"),
    "queries_split": ("B", "H", "T", "d_k"),
    "keys_split": ("B", "H", "S", "d_k"),
    "values_split": ("B", "H", "S", "d_k"),
    "scores": ("B", "H", "T", "S"),
    "scaled_scores": ("B", "H", "T", "S"),
    "weights": ("B", "H", "T", "S"),
    "head_outputs": ("B", "H", "T", "d_k"),
    "concatenated": ("B", "T", "D"),
    "output": ("B", "T", "D"),
}

# How far the stages may differ from the reference's own forward (float64).
_AGREEMENT_TOLERANCE = 1e-9


def divisors(number: int) -> list[int]:
    """The positive divisors of ``number``, ascending."""
    return [candidate for candidate in range(1, number + 1) if number % candidate == 0]


def check_heads(d_model: int, num_heads: int) -> None:
    """Raise UsageError unless ``num_heads`` divides ``d_model`` (listing the divisors)."""
    if d_model < 1:
        raise UsageError(f"--d-model must be a positive integer; got {d_model}")
    if num_heads < 1 or d_model % num_heads != 0:
        valid = ", ".join(str(value) for value in divisors(d_model))
        raise UsageError(
            f"--heads {num_heads} does not divide --d-model {d_model}: every head gets "
            f"d_k = D / H features, so H must divide D. Valid head counts for D = {d_model}: {valid}"
        )


@dataclass(frozen=True)
class Trace:
    """The named stages of one forward pass (arrays in ``stages``, order of ``STAGES``)."""

    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    d_model: int
    num_heads: int
    seed: int | None
    stages: dict[str, np.ndarray] = field(repr=False)
    parameters: dict[str, np.ndarray] = field(repr=False)

    @property
    def d_k(self) -> int:
        return self.d_model // self.num_heads

    @property
    def sizes(self) -> dict[str, int]:
        """The value of every shape letter, e.g. ``{"B": 1, "H": 4, ...}``."""
        batch = self.stages["inputs"].shape[0]
        return {"B": batch, "H": self.num_heads, "T": len(self.query_tokens),
                "S": len(self.key_tokens), "D": self.d_model, "d_k": self.d_k}

    def head_weights(self, batch_index: int = 0) -> np.ndarray:
        """The attention weights of one batch entry, ``(H, T, S)``."""
        return self.stages["weights"][batch_index]

    def to_dict(self, *, decimals: int | None = None) -> dict:
        """A JSON-ready dict; ``decimals`` rounds the numbers (e.g. to shrink a page)."""

        def plain(array: np.ndarray) -> list:
            return (np.round(array, decimals) if decimals is not None else array).tolist()

        return {
            "schema_version": SCHEMA_VERSION,
            "query_tokens": list(self.query_tokens),
            "key_tokens": list(self.key_tokens),
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "seed": self.seed,
            "sizes": self.sizes,
            "stages": [
                {"name": name, "axes": list(STAGES[name]), "shape": list(array.shape), "data": plain(array)}
                for name, array in self.stages.items()
            ],
            "parameters": [
                {"name": name, "axes": ["D", "D"], "shape": list(array.shape), "data": plain(array)}
                for name, array in self.parameters.items()
            ],
        }

    @classmethod
    def from_dict(cls, data: dict) -> Trace:
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ConfigError(f"trace schema_version {data.get('schema_version')!r}; expected {SCHEMA_VERSION}")
        return cls(
            query_tokens=tuple(data["query_tokens"]),
            key_tokens=tuple(data["key_tokens"]),
            d_model=int(data["d_model"]),
            num_heads=int(data["num_heads"]),
            seed=data["seed"],
            stages={entry["name"]: np.asarray(entry["data"], dtype=float) for entry in data["stages"]},
            parameters={entry["name"]: np.asarray(entry["data"], dtype=float) for entry in data["parameters"]},
        )

    def save(self, path: Path) -> Path:
        """Write the trace as ``.json`` or ``.npz`` (chosen by the suffix)."""
        path = Path(path)
        if path.suffix == ".json":
            path.write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")
        elif path.suffix == ".npz":
            metadata = {key: value for key, value in self.to_dict().items() if key not in ("stages", "parameters")}
            arrays = {f"stage.{name}": array for name, array in self.stages.items()}
            arrays.update({f"parameter.{name}": array for name, array in self.parameters.items()})
            np.savez(path, metadata=np.array(json.dumps(metadata, ensure_ascii=False)), **arrays)
        else:
            raise UsageError(f"cannot export a trace to {path.name!r}: use a .json or .npz file name")
        return path

    @classmethod
    def load(cls, path: Path) -> Trace:
        """Read a trace written by ``save``."""
        path = Path(path)
        if path.suffix == ".json":
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        with np.load(path, allow_pickle=False) as archive:
            data = json.loads(str(archive["metadata"]))
            data["stages"] = [{"name": name, "data": archive[f"stage.{name}"]} for name in STAGES]
            data["parameters"] = [{"name": name, "data": archive[f"parameter.{name}"]} for name in WEIGHT_NAMES]
        return cls.from_dict(data)


def trace_reference(
    *,
    reference: ModuleType,
    inputs: np.ndarray,
    tokens: list[str],
    num_heads: int,
    weights: dict[str, np.ndarray],
    seed: int | None = None,
) -> Trace:
    """Run the reference self-attention on ``inputs`` ``(B, T, D)`` and record every stage."""
    x = np.asarray(inputs, dtype=float)
    if x.ndim == 2:
        x = x[None]  # (B=1, T, D)
    d_model = x.shape[-1]
    check_heads(d_model, num_heads)
    attention = reference.MultiHeadAttention(d_model, num_heads)
    for name in WEIGHT_NAMES:
        setattr(attention, name, np.asarray(weights[name], dtype=float))

    stages: dict[str, np.ndarray] = {"inputs": x}
    stages["queries"] = x @ attention.W_Q  # (B, T, D)
    stages["keys"] = x @ attention.W_K  # (B, S, D)
    stages["values"] = x @ attention.W_V  # (B, S, D)
    for name in ("queries", "keys", "values"):
        stages[f"{name}_split"] = attention.split_heads(stages[name])  # (B, H, T|S, d_k)
    stages["scores"] = stages["queries_split"] @ np.swapaxes(stages["keys_split"], -1, -2)  # (B, H, T, S)
    stages["scaled_scores"] = stages["scores"] / np.sqrt(attention.d_k)  # (B, H, T, S)
    stages["weights"] = reference.softmax(stages["scaled_scores"])  # (B, H, T, S)
    stages["head_outputs"] = stages["weights"] @ stages["values_split"]  # (B, H, T, d_k)
    stages["concatenated"] = attention.combine_heads(stages["head_outputs"])  # (B, T, D)
    stages["output"] = stages["concatenated"] @ attention.W_O  # (B, T, D)

    _confirm_agreement(reference, attention, stages)
    return Trace(
        query_tokens=tuple(tokens),
        key_tokens=tuple(tokens),
        d_model=d_model,
        num_heads=num_heads,
        seed=seed,
        stages=stages,
        parameters={name: getattr(attention, name) for name in WEIGHT_NAMES},
    )


def _confirm_agreement(reference: ModuleType, attention, stages: dict[str, np.ndarray]) -> None:
    """Raise ConfigError if the staged pieces disagree with the reference's own calls."""
    head_outputs, weights = reference.scaled_dot_product_attention(
        stages["queries_split"], stages["keys_split"], stages["values_split"]
    )
    x = stages["inputs"]
    output, forward_weights = attention.forward(x, x, x, return_weights=True)
    pairs = {
        "head_outputs": (head_outputs, stages["head_outputs"]),
        "weights": (weights, stages["weights"]),
        "output": (output, stages["output"]),
        "weights (forward)": (forward_weights, stages["weights"]),
    }
    for name, (expected, traced) in pairs.items():
        if np.shape(expected) != np.shape(traced) or not np.allclose(expected, traced, atol=_AGREEMENT_TOLERANCE):
            raise ConfigError(
                f"the traced stage {name!r} disagrees with the reference's own result; "
                "the reference solution changed in a way the trace does not follow"
            )


def trace_sentence(
    *, sentence: str, d_model: int = 16, num_heads: int = 4, seed: int = 0, reference: ModuleType | None = None
) -> Trace:
    """Tokenize and embed ``sentence`` (see ``grader.viz.embedding``) and trace the reference on it."""
    tokens = tokenize(sentence)
    if not tokens:
        raise UsageError("the sentence is empty; pass some words, e.g. --sentence \"the cat sat\"")
    check_heads(d_model, num_heads)
    if reference is None:
        reference = load_reference()  # ConfigError where the solutions are not installed (a student release)
    return trace_reference(
        reference=reference,
        inputs=embed(tokens, d_model),
        tokens=tokens,
        num_heads=num_heads,
        weights=init_weights(d_model, seed=seed),
        seed=seed,
    )
