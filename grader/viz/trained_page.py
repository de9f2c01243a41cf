"""The trained-model presets of the explainer page (``mha demo``).

Each preset sentence of ``grader/content/trained.toml`` becomes one entry per
layer of the trained model, shaped like the page's other entries (a trace
per head count, here only the model's own H), so the four views work on it
unchanged. What differs is marked in the entry: ``model: "trained"``, the
layer, the causal mask (masked scaled scores are ``null``: they never reach
the softmax), and each head's role with its label in both languages.
"""

from __future__ import annotations

import numpy as np

from grader.i18n import LANGUAGES
from grader.tinymodel.roles import PROBE_SIZE
from grader.tinymodel.store import TrainedModel, shipped_model
from grader.tinymodel.vocabulary import encode
from grader.viz.maps import head_entropy
from grader.viz.trained import load_trained_texts, role_text, trained_maps, trained_tokens

# Texts of trained.toml that the page uses.
PAGE_PREFIXES = ("trained.page.", "trained.role.", "trained.measure.")


def page_texts() -> dict[str, dict[str, str]]:
    return {key: value for key, value in load_trained_texts().texts.items() if key.startswith(PAGE_PREFIXES)}


def trained_entries(*, lang: str, decimals: int, max_tokens: int, trained: TrainedModel | None = None) -> list[dict]:
    """One page entry per preset sentence and layer, layer 0 first."""
    trained = trained or shipped_model()
    texts = load_trained_texts()
    model = trained.model
    config = model.config
    entries = []
    for sentence in texts.presets:
        tokens = trained_tokens(sentence, lang, limit=max_tokens)
        maps = trained_maps(sentence, lang=lang, model=model)
        forward = model.forward(encode(sentence)[None])
        for layer, result in enumerate(forward.layers):
            stages = {name: np.asarray(array) for name, array in result.stages.items()}
            visible = np.tril(np.ones((len(tokens), len(tokens)), dtype=bool))  # (T, T)
            rounded = {name: array[0].round(decimals).tolist() for name, array in stages.items()}
            rounded["scaled_scores"] = np.where(visible, stages["scaled_scores"][0].round(decimals), None).tolist()
            roles = []
            for head in range(config.num_heads):
                role = maps.role(layer, head)
                roles.append({**role.to_dict(), "label": {code: role_text(role, texts, code) for code in LANGUAGES}})
            label = {code: texts.text("trained.page.option", code, layer=layer, sentence=sentence)
                     for code in LANGUAGES}
            trace = {
                "sizes": {"B": 1, "H": config.num_heads, "T": len(tokens), "S": len(tokens),
                          "D": config.d_model, "d_k": config.d_k},
                "shapes": {name: list(array.shape) for name, array in stages.items()},
                "stages": rounded,
                "entropy_bits": head_entropy(stages["weights"][0]).round(decimals).tolist(),
                "masked": True,
                "roles": roles,
            }
            entries.append({"text": label[lang], "label": label, "sentence": sentence, "tokens": list(tokens),
                            "model": "trained", "layer": layer, "d_model": config.d_model,
                            "head_options": [config.num_heads], "traces": {str(config.num_heads): trace},
                            "training": {"seed": trained.settings["seed"], "steps": trained.settings["steps"],
                                         "count": PROBE_SIZE}})
    return entries
