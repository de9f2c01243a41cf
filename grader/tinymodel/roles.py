"""What each head does, measured: its attention pattern's scores, and its share of the task.

A head's *role* is read off its attention weights on a fixed probe set (512
sequences of the training task, 24 tokens each, seeded), never asserted:

- ``previous``: the weight a query puts on the token just before it;
- ``induction``: the weight on tokens that *followed* an earlier occurrence
  of the query's own token (the "prefix-matching" score of Olsson et al.,
  2022), over the queries whose token has occurred before;
- ``first``: the weight on the first token, the start marker ``<s>``;
- ``self``: the weight a query puts on itself;
- ``diffuse``: none of these reaches ``ROLE_THRESHOLD``; its measure is the
  rows' entropy as a fraction of the largest possible (1 = uniform).

The first four are averaged over the queries at positions 2 and later
(before that, "previous", "first" and "self" are the same key). The head's
role is the pattern with the highest score, if that score reaches
``ROLE_THRESHOLD``.

*Ablation* zeroes one head's output (its ``d_k`` features before ``W_O``) and
measures the task loss again: the cross-entropy of the predictions the task
determines (the repeats), and, beside it, the loss over every prediction
that training minimised. ``damage`` says how much of the gap between the
intact model and chance that head's removal opens.

Shape legend: ``B`` probe sequences, ``L`` layers, ``H`` heads, ``T`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.tinymodel.model import TinyTransformer, causal_mask, next_token_loss
from grader.tinymodel.tasks import Batch, repeated_runs
from grader.tinymodel.tokens import LETTERS

ROLES = ("previous", "induction", "first", "self", "diffuse")
PATTERNS = ROLES[:-1]
# A head takes a pattern's name when at least this share of its weight follows the pattern.
ROLE_THRESHOLD = 0.5
PROBE_SEED = 2022
PROBE_SIZE = 512
PROBE_LENGTH = 24
# Guessing a letter uniformly: what a model that ignores the context scores on the repeats.
CHANCE_LOSS = float(np.log(len(LETTERS)))
FIRST_MEASURED_QUERY = 2


def probe_batch(*, size: int = PROBE_SIZE, length: int = PROBE_LENGTH, seed: int = PROBE_SEED) -> Batch:
    """The fixed probe set: ``size`` sequences of the training task, ``length`` tokens each."""
    return repeated_runs(np.random.default_rng(seed), batch=size, length=length)


def pattern_scores(weights: np.ndarray, ids: np.ndarray) -> dict[str, np.ndarray]:
    """Each pattern's score per head: weights ``(L, B, H, T, T)`` and ids ``(B, T)`` -> ``{role: (L, H)}``.

    A score is NaN when the sequences give it nothing to measure (e.g.
    ``induction`` when no token repeats).
    """
    length = ids.shape[1]
    queries = np.arange(FIRST_MEASURED_QUERY, length)  # (T',) the measured query positions
    if queries.size == 0:  # too short: "previous", "first" and "self" are still one key
        return {role: np.full((weights.shape[0], weights.shape[2]), np.nan) for role in ROLES}
    scores = {}
    with np.errstate(invalid="ignore"):
        scores["previous"] = weights[..., queries, queries - 1].mean(axis=(1, -1))  # (L, H)
        scores["first"] = weights[..., queries, 0].mean(axis=(1, -1))  # (L, H)
        scores["self"] = weights[..., queries, queries].mean(axis=(1, -1))  # (L, H)
        # Key j "follows an earlier occurrence" of query t's token when token j-1 equals token t, j <= t.
        before = np.concatenate([np.full((ids.shape[0], 1), -1), ids[:, :-1]], axis=1)  # (B, T) token j-1
        follows = (before[:, None, :] == ids[:, :, None]) & causal_mask(length)[None]  # (B, T, T)
        repeats = follows.any(axis=-1)  # (B, T) queries whose token occurred before
        on_followers = (weights * follows[None, :, None]).sum(axis=-1)  # (L, B, H, T)
        counted = repeats.sum()
        scores["induction"] = (on_followers * repeats[None, :, None]).sum(axis=(1, 3)) / counted if counted \
            else np.full(weights.shape[0:1] + weights.shape[2:3], np.nan)
        scores["diffuse"] = _relative_entropy(weights[..., queries, :], queries).mean(axis=(1, -1))  # (L, H)
    return scores


def _relative_entropy(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Each row's entropy over the keys it may see, as a fraction of log(queries + 1): ``(..., T')``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(rows > 0, -rows * np.log(rows), 0.0)  # 0 · log 0 counts as 0
    return terms.sum(axis=-1) / np.log(queries + 1)


@dataclass(frozen=True)
class HeadRole:
    """One head's role, the score behind it, and every pattern's score."""

    layer: int  # numbered from 0
    head: int  # numbered from 0
    role: str  # one of ROLES
    score: float  # the role's own measure
    scores: dict[str, float]

    @property
    def also(self) -> tuple[str, ...]:
        """Other patterns that also reach ``ROLE_THRESHOLD``, best first: the head does several things."""
        others = [role for role in PATTERNS if role != self.role and self.scores[role] >= ROLE_THRESHOLD]
        return tuple(sorted(others, key=lambda role: -self.scores[role]))

    @property
    def name(self) -> str:
        """``"1.2"``: layer 1, head 2, both numbered from 0 as everywhere in the project."""
        return f"{self.layer}.{self.head}"

    def to_dict(self) -> dict:
        return {"layer": self.layer, "head": self.head, "role": self.role, "score": self.score,
                "also": list(self.also), "scores": dict(self.scores)}


def assign_roles(scores: dict[str, np.ndarray]) -> tuple[HeadRole, ...]:
    """Name every head after its highest-scoring pattern, or ``diffuse`` below ``ROLE_THRESHOLD``."""
    layers, heads = scores["previous"].shape
    roles = []
    for layer in range(layers):
        for head in range(heads):
            values = {role: float(scores[role][layer, head]) for role in ROLES}
            measured = {role: values[role] for role in PATTERNS if np.isfinite(values[role])}
            best = max(measured, key=measured.get) if measured else None
            if best is not None and measured[best] >= ROLE_THRESHOLD:
                roles.append(HeadRole(layer, head, best, measured[best], values))
            else:
                roles.append(HeadRole(layer, head, "diffuse", values["diffuse"], values))
    return tuple(roles)


def head_roles(model: TinyTransformer, probe: Batch | None = None) -> tuple[HeadRole, ...]:
    """The role of every head, layer by layer, measured on ``probe`` (default: ``probe_batch()``)."""
    probe = probe if probe is not None else probe_batch()
    return assign_roles(pattern_scores(model.forward(probe.ids).weights, probe.ids))


@dataclass(frozen=True)
class TaskScore:
    """How well the model does on a probe set: the task and the whole training objective."""

    loss: float  # nats, over the determined predictions (the repeats)
    accuracy: float  # share of the determined predictions whose most likely letter is right
    overall_loss: float  # nats, over every prediction, as in training

    def to_dict(self) -> dict:
        return {"loss": self.loss, "accuracy": self.accuracy, "overall_loss": self.overall_loss}


def task_score(model: TinyTransformer, probe: Batch, zeroed: tuple[tuple[int, int], ...] = ()) -> TaskScore:
    """The model's score on ``probe`` with the heads ``zeroed`` ((layer, head) pairs, from 0)."""
    mask = np.ones((model.config.num_layers, model.config.num_heads))  # (L, H)
    for layer, head in zeroed:
        mask[layer, head] = 0.0
    logits = model.forward(probe.ids, head_mask=mask).logits  # (B, T, V)
    loss, _ = next_token_loss(logits, probe.ids, probe.repeated)
    overall, _ = next_token_loss(logits, probe.ids)
    right = logits[:, :-1].argmax(axis=-1) == probe.ids[:, 1:]  # (B, T-1)
    return TaskScore(loss=loss, accuracy=float(right[probe.repeated].mean()), overall_loss=overall)


@dataclass(frozen=True)
class Ablation:
    """The model's score intact, and with each head zeroed in turn (``zeroed[layer][head]``)."""

    intact: TaskScore
    zeroed: tuple[tuple[TaskScore, ...], ...]

    @property
    def losses(self) -> np.ndarray:
        """``(L, H)``: the task loss with that head zeroed."""
        return np.array([[score.loss for score in layer] for layer in self.zeroed])

    @property
    def damage(self) -> np.ndarray:
        """``(L, H)``: how far towards chance removing the head moves the task loss (1 = all the way)."""
        return (self.losses - self.intact.loss) / (CHANCE_LOSS - self.intact.loss)

    def to_dict(self) -> dict:
        return {"intact": self.intact.to_dict(), "chance_loss": CHANCE_LOSS,
                "zeroed": [[score.to_dict() for score in layer] for layer in self.zeroed],
                "damage": self.damage.tolist()}


def ablate_heads(model: TinyTransformer, probe: Batch | None = None) -> Ablation:
    """Zero each head in turn and score the model on ``probe`` (default: ``probe_batch()``)."""
    probe = probe if probe is not None else probe_batch()
    config = model.config
    zeroed = tuple(tuple(task_score(model, probe, ((layer, head),)) for head in range(config.num_heads))
                   for layer in range(config.num_layers))
    return Ablation(intact=task_score(model, probe), zeroed=zeroed)
