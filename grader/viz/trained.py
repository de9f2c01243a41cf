"""The trained model's heads: per-layer maps of a sentence labelled by role, and the ablation report.

``mha viz --trained`` draws every layer of ``grader.tinymodel``'s shipped model
(one row per layer), each head titled with the role its weights show and the
measure behind it (``grader.tinymodel.roles``); ``--ablate`` adds the table of
the task loss with each head zeroed, the head-similarity matrix on the probe
set, and what they say. Texts come from ``grader/content/trained.toml``.

Shape legend: ``L`` layers, ``H`` heads, ``T`` tokens (``<s>`` included).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from grader.errors import UsageError
from grader.paths import CONTENT_DIR
from grader.tinymodel.model import TinyTransformer
from grader.tinymodel.roles import (CHANCE_LOSS, PROBE_LENGTH, PROBE_SIZE, ROLE_THRESHOLD, Ablation, HeadRole,
                                    TaskScore, ablate_heads, head_roles, pattern_scores, probe_batch, task_score)
from grader.tinymodel.store import shipped_model
from grader.tinymodel.vocabulary import LETTERS, UnknownTokens, encode, tokens_of
from grader.viz.maps import ALIKE_THRESHOLD, head_entropy, head_similarity
from grader.viz.texts import VizTexts, load_viz_texts

TRAINED_CONTENT = CONTENT_DIR / "trained.toml"
DEFAULT_TRAINED_SENTENCE = "q x m a r k e t m a r k e t"
# Verdicts of the ablation, by how far zeroing a head moves the task loss towards chance.
CARRIES_DAMAGE = 0.5
HELPS_DAMAGE = 0.2
# A head whose removal lowers the task loss yet raises the overall loss by this much works elsewhere.
ELSEWHERE_RISE = 0.01


@functools.cache
def load_trained_texts() -> VizTexts:
    """The texts of ``viz.toml`` and ``trained.toml`` (whose keys all start ``trained.``); its presets."""
    trained = load_viz_texts(TRAINED_CONTENT)
    return VizTexts(texts={**load_viz_texts().texts, **trained.texts}, presets=trained.presets)


def trained_tokens(sentence: str, lang: str = "en", *, limit: int | None = None) -> tuple[str, ...]:
    """The model's tokens for ``sentence`` (``<s>`` first), with bilingual refusals."""
    if not sentence.split():
        raise UsageError('the sentence is empty; pass some letters, e.g. --sentence "a b c a b c"')
    try:
        tokens = tokens_of(sentence)
    except UnknownTokens as unknown:
        raise UsageError(load_trained_texts().text(
            "trained.message.unknown_tokens", lang, tokens=", ".join(repr(token) for token in unknown.unknown),
            letters=" ".join(LETTERS))) from unknown
    if limit is not None and len(tokens) > limit:
        raise UsageError(load_viz_texts().text("message.too_long", lang, count=len(tokens), limit=limit))
    return tokens


def role_text(role: HeadRole, texts: VizTexts, lang: str) -> str:
    """``first token 0.64 · induction / copy 0.62``: the role, its measure, and any other pattern it reaches."""
    parts = [texts.text("trained.figure.role", lang, role=texts.text(f"trained.role.{name}", lang),
                        score=f"{role.scores[name] if name != 'diffuse' else role.score:.2f}")
             for name in (role.role, *role.also)]
    return " · ".join(parts)


@dataclass(frozen=True)
class TrainedMaps:
    """One sentence through the trained model: every layer's weights and every head's role."""

    tokens: tuple[str, ...]
    weights: np.ndarray  # (L, H, T, T)
    roles: tuple[HeadRole, ...]  # measured on the probe set, layer by layer
    here: dict[str, np.ndarray]  # the same measures on this sentence, {role: (L, H)}, NaN if not measurable

    @property
    def num_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def num_heads(self) -> int:
        return self.weights.shape[1]

    def role(self, layer: int, head: int) -> HeadRole:
        return self.roles[layer * self.num_heads + head]

    def here_score(self, layer: int, head: int) -> float:
        """This sentence's value of the measure that named the head."""
        return float(self.here[self.role(layer, head).role][layer, head])

    @property
    def similarity(self) -> np.ndarray:
        """``(L·H, L·H)``: how alike every two heads' maps are on this sentence."""
        return head_similarity(self.weights.reshape(-1, *self.weights.shape[2:]))

    def to_dict(self) -> dict:
        """``tokens``, and ``layers``: one entry per layer with ``weights`` ``(H, T, T)`` and each head's role."""

        def plain(value: float) -> float | None:
            return float(value) if np.isfinite(value) else None

        layers = []
        for layer in range(self.num_layers):
            heads = []
            for head in range(self.num_heads):
                role = self.role(layer, head)
                heads.append({**role.to_dict(), "here": {name: plain(values[layer, head])
                                                         for name, values in self.here.items()}})
            layers.append({"layer": layer, "weights": self.weights[layer].tolist(),
                           "entropy_bits": head_entropy(self.weights[layer]).tolist(), "heads": heads})
        return {"tokens": list(self.tokens), "source": "trained", "num_layers": self.num_layers,
                "num_heads": self.num_heads, "layers": layers,
                "head_names": [role.name for role in self.roles],
                "similarity": np.where(np.isfinite(self.similarity), self.similarity, None).tolist(),
                "probe": {"sequences": PROBE_SIZE, "length": PROBE_LENGTH, "threshold": ROLE_THRESHOLD}}


def trained_maps(sentence: str, *, lang: str = "en", model: TinyTransformer | None = None,
                 limit: int | None = None) -> TrainedMaps:
    """Run ``sentence`` through ``model`` (default: the shipped one) and label its heads."""
    tokens = trained_tokens(sentence, lang, limit=limit)
    model = model or shipped_model().model
    ids = encode(sentence)[None]  # (B=1, T)
    weights = model.forward(ids).weights  # (L, B=1, H, T, T)
    return TrainedMaps(tokens=tokens, weights=weights[:, 0], roles=head_roles(model),
                       here=pattern_scores(weights, ids))


@dataclass(frozen=True)
class Verdict:
    """What one head's ablation says, as a key of ``[trained.ablation]`` and its fields."""

    kind: str  # carries, helps, redundant, minor, elsewhere
    fields: dict

    def describe(self, texts: VizTexts, lang: str) -> str:
        return texts.text(f"trained.ablation.{self.kind}", lang, **self.fields)


@dataclass(frozen=True)
class AblationReport:
    """The ablation of every head, the probe-set similarity, and the groups zeroed together."""

    roles: tuple[HeadRole, ...]
    ablation: Ablation
    similarity: np.ndarray  # (L·H, L·H) on the probe set
    together: tuple[tuple[tuple[str, ...], TaskScore], ...]  # (head names, score with all of them zeroed)

    def damage_of(self, score: TaskScore) -> float:
        return (score.loss - self.ablation.intact.loss) / (CHANCE_LOSS - self.ablation.intact.loss)

    def verdict(self, index: int, texts: VizTexts, lang: str) -> Verdict:
        """The verdict on head ``index`` (layer-major, from 0)."""
        role = self.roles[index]
        score = self.ablation.zeroed[role.layer][role.head]
        damage = self.damage_of(score)
        fields = {"name": role.name, "role": texts.text(f"trained.role.{role.role}", lang), "damage": percent(damage)}
        if damage >= CARRIES_DAMAGE:
            return Verdict("carries", fields)
        if damage >= HELPS_DAMAGE:
            return Verdict("helps", fields)
        if damage < 0 and score.overall_loss - self.ablation.intact.overall_loss >= ELSEWHERE_RISE:
            return Verdict("elsewhere", {**fields, "before": f"{self.ablation.intact.overall_loss:.2f}",
                                         "after": f"{score.overall_loss:.2f}"})
        alike = [other for other in range(len(self.roles)) if other != index
                 and self.similarity[index, other] >= ALIKE_THRESHOLD]
        if alike:
            twin = max(alike, key=lambda other: self.similarity[index, other])
            return Verdict("redundant", {**fields, "twin": self.roles[twin].name,
                                         "similarity": f"{self.similarity[index, twin]:.2f}"})
        return Verdict("minor", fields)

    def to_dict(self, lang: str = "en") -> dict:
        texts = load_trained_texts()
        heads = []
        for index, role in enumerate(self.roles):
            score = self.ablation.zeroed[role.layer][role.head]
            verdict = self.verdict(index, texts, lang)
            heads.append({**role.to_dict(), "zeroed": score.to_dict(), "damage": self.damage_of(score),
                          "verdict": verdict.kind, "says": verdict.describe(texts, lang)})
        return {"probe": {"sequences": PROBE_SIZE, "length": PROBE_LENGTH}, "chance_loss": CHANCE_LOSS,
                "intact": self.ablation.intact.to_dict(), "heads": heads,
                "head_names": [role.name for role in self.roles], "similarity": self.similarity.tolist(),
                "together": [{"heads": list(names), **score.to_dict(), "damage": self.damage_of(score)}
                             for names, score in self.together]}


def percent(share: float) -> str:
    return f"{100 * share:.0f}%"


def ablation_report(model: TinyTransformer | None = None) -> AblationReport:
    """Zero each head of ``model`` (default: the shipped one) in turn, then every alike pair and whole layer."""
    model = model or shipped_model().model
    probe = probe_batch()
    roles = head_roles(model, probe)
    weights = model.forward(probe.ids).weights  # (L, B, H, T, T)
    layers, batch, heads, length, _ = weights.shape
    # Every query row of every probe sequence is one distribution to compare.
    rows = weights.transpose(0, 2, 1, 3, 4).reshape(layers * heads, batch * length, length)
    similarity = head_similarity(rows)  # (L·H, L·H)
    groups = [(first, second) for first in range(layers * heads) for second in range(first + 1, layers * heads)
              if similarity[first, second] >= ALIKE_THRESHOLD]
    groups += [tuple(range(layer * heads, (layer + 1) * heads)) for layer in range(layers)]
    together = tuple((tuple(roles[index].name for index in group),
                      task_score(model, probe, tuple(divmod(index, heads) for index in group)))
                     for group in groups)
    return AblationReport(roles=roles, ablation=ablate_heads(model, probe), similarity=similarity,
                          together=together)
