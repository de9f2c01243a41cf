"""One self-contained HTML page that explains multi-head attention in four views.

Every number on the page comes from ``grader.viz.trace`` (the Python reference),
computed here for each preset sentence and each valid head count, and embedded
as JSON; the trained-model presets come from the project's trained model
(``grader.viz.trained_page``), one entry per layer. The page's HTML, CSS and
JavaScript are template files under ``grader/viz/assets/``, inlined into the
output: nothing is fetched, and a Content-Security-Policy forbids any network
access. Texts come from ``grader/content/viz.toml`` (and ``trained.toml``) in
both languages; the page switches between them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from grader.errors import ConfigError, UsageError
from grader.grading.reference import reference_installed
from grader.viz.embedding import tokenize
from grader.viz.maps import head_entropy
from grader.viz.texts import load_viz_texts
from grader.viz.trace import STAGES, check_heads, divisors, trace_sentence

ASSETS_DIR = Path(__file__).resolve().parent / "assets"
# Pages rendered by `mha release --student` where the reference is, one per language, for a release
# (which holds no reference): `mha demo` there writes the one of its language.
SHIPPED_PAGES_DIR = Path(__file__).resolve().parent / "pages"
DEFAULT_D_MODEL, DEFAULT_HEADS, DEFAULT_SEED = 16, 4, 0
# Concatenated in this order into the page's one script: helpers, views, then the controller.
SCRIPTS = ("render.js", "modes.js", "app.js")
# A sentence longer than this no longer fits the local view's table on a phone.
MAX_TOKENS = 12
MAX_D_MODEL = 32
# Four decimals: one more than the page shows, and the file stays small.
DECIMALS = 4


@dataclass(frozen=True)
class ExplainerPage:
    """A written explainer: where, how big, and what it holds."""

    path: Path
    size_bytes: int
    sentences: tuple[str, ...]
    head_options: tuple[int, ...]
    shipped: bool = False  # True: the page made with the release, copied (no reference here)

    def to_dict(self) -> dict:
        return {"path": str(self.path), "size_bytes": self.size_bytes, "sentences": list(self.sentences),
                "head_options": list(self.head_options), "shipped": self.shipped}


def explainer_data(
    *, sentences: list[str], d_model: int = 16, heads: int = 4, seed: int = 0, lang: str = "en"
) -> dict:
    """Everything the page shows, as JSON-ready data (traces for each sentence and head count)."""
    if not 2 <= d_model <= MAX_D_MODEL:
        raise UsageError(f"--d-model must be between 2 and {MAX_D_MODEL} for the explainer; got {d_model}")
    check_heads(d_model, heads)
    texts = load_viz_texts()
    options = divisors(d_model)
    entries = []
    for sentence in dict.fromkeys(sentences):  # keep order, drop repeats
        tokens = tokenize(sentence)
        if not tokens:
            raise UsageError("a --sentence is empty; pass some words")
        if len(tokens) > MAX_TOKENS:
            raise UsageError(texts.text("message.too_long", lang, count=len(tokens), limit=MAX_TOKENS)
                             + f" ({sentence!r})")
        entries.append({"text": sentence, "tokens": tokens,
                        "traces": {str(count): _trace_data(sentence, d_model, count, seed) for count in options}})
    from grader.viz.trained_page import page_texts, trained_entries

    entries += trained_entries(lang=lang, decimals=DECIMALS, max_tokens=MAX_TOKENS)
    trained_texts = page_texts()
    example = next(value for value in range(2, d_model + 2) if d_model % value)
    return {
        "schema_version": 1,
        "d_model": d_model,
        "seed": seed,
        "lang": lang,
        "head_options": options,
        "heads": heads,
        "non_divisor_example": example,
        "stage_order": list(STAGES),
        "stage_axes": {name: list(axes) for name, axes in STAGES.items()},
        "sentences": entries,
        "texts": {**{key: value for key, value in texts.texts.items()
                     if key.split(".")[0] in ("page", "mode", "stage")}, **trained_texts},
    }


def _trace_data(sentence: str, d_model: int, num_heads: int, seed: int) -> dict:
    """One trace, batch entry 0, rounded; shapes keep the batch axis (B = 1) as Python has it."""
    trace = trace_sentence(sentence=sentence, d_model=d_model, num_heads=num_heads, seed=seed)
    return {
        "sizes": trace.sizes,
        "shapes": {name: list(array.shape) for name, array in trace.stages.items()},
        "stages": {name: array[0].round(DECIMALS).tolist() for name, array in trace.stages.items()},
        "entropy_bits": head_entropy(trace.head_weights()).round(DECIMALS).tolist(),
    }


def render_page(data: dict) -> str:
    """The page: the HTML template with its style, script and data inlined."""
    template = (ASSETS_DIR / "page.html").read_text(encoding="utf-8")
    style = (ASSETS_DIR / "style.css").read_text(encoding="utf-8")
    script = "\n".join((ASSETS_DIR / name).read_text(encoding="utf-8") for name in SCRIPTS)
    # "<" inside the JSON would let a sentence such as "</script>" end the data block early.
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    texts = data["texts"]
    lang = data["lang"]
    replacements = {
        "<!--mha:lang-->": "zh-Hans" if lang == "zh" else "en",
        "<!--mha:title-->": _escape(texts["page.title"][lang]),
        "/*mha:style*/": style,
        "/*mha:script*/": script,
        "<!--mha:data-->": payload,
    }
    for marker, value in replacements.items():
        if marker not in template:
            raise RuntimeError(f"the explainer template lost its {marker} marker")
        template = template.replace(marker, value)
    return template


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_explainer(
    *, out: Path, sentences: list[str] | None = None, d_model: int = DEFAULT_D_MODEL, heads: int = DEFAULT_HEADS,
    seed: int = DEFAULT_SEED, lang: str = "en",
) -> ExplainerPage:
    """Write the explainer for the presets (plus ``sentences``, shown first) to ``out``."""
    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"--out {out.name!r}: the explainer is a web page; use a .html file name")
    if not reference_installed():
        return _copy_shipped_page(out=out, sentences=sentences, d_model=d_model, heads=heads, seed=seed, lang=lang)
    chosen = list(sentences or []) + list(load_viz_texts().presets)
    data = explainer_data(sentences=chosen, d_model=d_model, heads=heads, seed=seed, lang=lang)
    html = render_page(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return ExplainerPage(path=out, size_bytes=len(html.encode("utf-8")),
                         sentences=tuple(entry["text"] for entry in data["sentences"] if "model" not in entry),
                         head_options=tuple(data["head_options"]))


def write_shipped_pages(folder: Path = SHIPPED_PAGES_DIR) -> tuple[Path, ...]:
    """The default page in every language, into ``folder`` (a release's ``grader/viz/pages``)."""
    from grader.i18n import LANGUAGES

    return tuple(write_explainer(out=Path(folder) / f"explainer.{lang}.html", lang=lang).path for lang in LANGUAGES)


def _copy_shipped_page(*, out: Path, sentences, d_model: int, heads: int, seed: int, lang: str) -> ExplainerPage:
    """Where the reference is absent (a student release): the page made with the release, or a message."""
    texts = load_viz_texts()
    custom = [option for option, chosen in (("--sentence", bool(sentences)), ("--d-model", d_model != DEFAULT_D_MODEL),
                                            ("--heads", heads != DEFAULT_HEADS), ("--seed", seed != DEFAULT_SEED))
              if chosen]
    if custom:
        raise ConfigError(texts.text("message.demo_needs_reference", lang, options=", ".join(custom)))
    page = SHIPPED_PAGES_DIR / f"explainer.{lang}.html"
    if not page.is_file():
        raise ConfigError(texts.text("message.demo_missing", lang))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(page.read_bytes())
    return ExplainerPage(path=out, size_bytes=page.stat().st_size, sentences=tuple(texts.presets),
                         head_options=tuple(divisors(DEFAULT_D_MODEL)), shipped=True)
