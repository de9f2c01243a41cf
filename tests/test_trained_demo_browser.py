"""The explainer's trained-model presets in a real headless Chromium: the four views, the mask, the roles.

Like ``test_demo_browser.py``: every test fails on a console error, an
uncaught exception or a network request; without Chromium the tests skip,
except in CI (``CI`` set), where a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from chromium_driver import Chromium, find_chromium
from grader.tinymodel.store import shipped_model
from grader.tinymodel.vocabulary import encode
from grader.viz.explainer import explainer_data, write_explainer
from grader.viz.texts import load_viz_texts
from grader.viz.trained import load_trained_texts

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (Debian: apt install chromium fonts-noto-cjk)")
        pytest.skip("Chromium not found (Debian: apt install chromium; or set MHA_CHROMIUM); CI runs these tests")
    chromium = Chromium(binary, tmp_path_factory.mktemp("chromium-profile"))
    chromium.page("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def page_url(tmp_path_factory) -> str:
    page = write_explainer(out=tmp_path_factory.mktemp("explainer") / "explainer.html", d_model=16, heads=2, seed=0)
    return page.path.resolve().as_uri()


@pytest.fixture(scope="module")
def python_data() -> dict:
    return explainer_data(sentences=list(load_viz_texts().presets), d_model=16, heads=2, seed=0)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("MHA_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser, page_url):
    browser.resize(1366, 900)
    browser.open(page_url)
    yield browser
    assert browser.console_errors() == []
    assert [url for url in browser.requested_urls() if url != page_url and not url.startswith("data:")] == []


def js(browser: Chromium, expression: str):
    return browser.evaluate(expression)


def texts_of(browser: Chromium, selector: str) -> list[str]:
    return js(browser, f"[...document.querySelectorAll({json.dumps(selector)})].map((n) => n.textContent)")


def choose_sentence(browser: Chromium, index: int) -> None:
    js(browser, f"{{ const s = document.querySelector('#sentence'); s.value = '{index}';"
                " s.dispatchEvent(new Event('change')); } 1")


def choose_entry(browser: Chromium, python_data: dict, layer: int, sentence: str) -> dict:
    index = next(index for index, entry in enumerate(python_data["sentences"])
                 if entry.get("layer") == layer and entry.get("sentence") == sentence)
    choose_sentence(browser, index)
    return python_data["sentences"][index]


def number(value: float) -> str:
    return f"{value:.3f}".replace("-", "\u2212")


PRESET = "a b c d e f a b c d e"


def test_trained_preset_fixes_the_head_count_and_says_what_the_page_shows(page, python_data, screenshots):
    entry = choose_entry(page, python_data, 1, PRESET)
    texts = load_trained_texts()
    assert js(page, "document.querySelector('#intro').textContent") == texts.text("trained.page.intro", "en")
    assert "docs/trained_model.md" in js(page, "document.querySelector('#intro').textContent")
    heads = js(page, "[...document.querySelectorAll('input[name=heads]')].map((n) => [Number(n.value), n.disabled, n.checked])")
    assert [value for value, disabled, _ in heads if not disabled] == [4]
    assert [value for value, _, checked in heads if checked] == [4]
    assert "H = 4 heads of d_k = 8" in js(page, "document.querySelector('#heads-why').textContent")
    page.click("#tab-static")
    captions = texts_of(page, "#panel-static [data-role=heatmap] .caption")
    trace = entry["traces"]["4"]
    assert captions == [f"head {head} · entropy {bits:.2f} bits · {role['label']['en']}"
                        for head, (bits, role) in enumerate(zip(trace["entropy_bits"], trace["roles"]))]
    assert "induction" in js(page, "[...document.querySelectorAll('#panel-static [data-head-role]')]"
                                   ".map((n) => n.dataset.headRole)")
    shot = page.screenshot(screenshots / "trained-static.png")
    assert shot.is_file()
    # back to an untrained sentence: every divisor is offered again
    choose_sentence(page, 0)
    assert not any(js(page, "[...document.querySelectorAll('input[name=heads]')].map((n) => n.disabled)"))
    assert js(page, "document.querySelector('#intro').textContent") == load_viz_texts().text("page.intro", "en")


def test_trained_local_view_shows_the_mask_and_the_python_numbers(page, python_data, screenshots):
    entry = choose_entry(page, python_data, 1, PRESET)
    page.click("#tab-local")
    page.click('input[name="local-head"][value="1"]')
    page.click('input[name="local-query"][value="7"]')  # the second "a": its induction head looks at "b"
    stages = entry["traces"]["4"]["stages"]
    weights = texts_of(page, '#local-table tbody td[data-column="weight"]')
    assert weights == [number(value) for value in stages["weights"][1][7]]
    scaled = texts_of(page, '#local-table tbody td[data-column="scaled"]')
    assert scaled[:8] == [number(value) for value in stages["scaled_scores"][1][7][:8]]
    assert scaled[8:] == ["\u2212\u221e (masked)"] * 4
    # the model's own forward pass says the same
    model = shipped_model().model
    forward = model.forward(encode(PRESET)[None])
    assert forward.weights[1, 0, 1, 7].argmax() == 2  # key "b", which followed the first "a"
    assert "Causal mask" in js(page, "document.querySelector('[data-note=mask_note]').textContent")
    page.screenshot(screenshots / "trained-local.png")


def test_trained_global_and_dynamic_views_work_and_name_the_layer_input(page, python_data):
    entry = choose_entry(page, python_data, 0, PRESET)
    trace = entry["traces"]["4"]
    shown = js(page, "document.querySelector('#panel-global .shape[data-stage=weights]').textContent")
    assert shown == "(B, H, T, S) = (1, 4, 12, 12)"
    assert "Layer 0's input X" in js(page, "document.querySelector('[data-note=layer_inputs]').textContent")
    captions = texts_of(page, "#panel-global .caption.role")
    assert captions == [role["label"]["en"] for role in trace["roles"]]
    page.click("#tab-dynamic")
    page.click('[data-key="goto-8"]')  # scaled scores
    assert js(page, "document.querySelector('.stage-view').dataset.stage") == "scaled_scores"
    masked = js(page, "document.querySelectorAll('.stage-view rect[data-masked]').length")
    assert masked == 4 * (12 * 11 // 2)  # every head's upper triangle
    page.click('[data-key="goto-12"]')
    assert js(page, "document.querySelector('.stage-view').dataset.stage") == "output"


def test_trained_preset_in_chinese(page, python_data):
    entry = choose_entry(page, python_data, 0, PRESET)
    page.click('button.language[data-lang="zh"]')
    option = js(page, "document.querySelector('#sentence').selectedOptions[0].textContent")
    assert option == entry["label"]["zh"] == f"训练好的模型，层 0：{PRESET}"
    page.click("#tab-static")
    captions = texts_of(page, "#panel-static [data-role=heatmap] .caption")
    assert captions[0].startswith("头 0 · 熵 ") and entry["traces"]["4"]["roles"][0]["label"]["zh"] in captions[0]
    assert "训练好的权重" in js(page, "document.querySelector('#footer').textContent")


def test_trained_views_fit_a_phone(page, python_data):
    page.resize(375, 740, mobile=True)
    page.open(js(page, "location.href"))
    choose_entry(page, python_data, 1, "x m a r k e t m a r k")
    for mode in ("global", "local", "dynamic", "static"):
        page.click(f"#tab-{mode}")
        assert js(page, "document.documentElement.scrollWidth <= window.innerWidth"), mode
