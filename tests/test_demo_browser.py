"""The explainer page in a real headless Chromium: every view, control and language.

Each test opens the page afresh and fails on any console error, uncaught
exception or network request. Screenshots go to ``$MHA_SCREENSHOTS`` when set
(CI keeps them), else to a temporary folder. Without Chromium these tests skip,
except in CI (``CI`` set), where a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import re
import struct
import time
from pathlib import Path

import pytest

from chromium_driver import Chromium, find_chromium
from conftest import require
from grader.viz.explainer import explainer_data, write_explainer
from grader.viz.texts import load_viz_texts
from grader.viz.trace import STAGES

pytestmark = pytest.mark.slow
SENTENCE = "the cat chases the mouse"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    binary = find_chromium()
    require(binary is not None, "Chromium is not installed (Debian: apt install chromium fonts-noto-cjk; "
                                "or set MHA_CHROMIUM)")
    chromium = Chromium(binary, tmp_path_factory.mktemp("chromium-profile"))
    # Screenshots should show finished states, not a fade caught half-way.
    chromium.page("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def page_url(tmp_path_factory) -> str:
    page = write_explainer(out=tmp_path_factory.mktemp("explainer") / "explainer.html", d_model=16, heads=4, seed=0)
    return page.path.resolve().as_uri()


@pytest.fixture(scope="module")
def python_data() -> dict:
    """The numbers the page should show, computed again in Python."""
    return explainer_data(sentences=list(load_viz_texts().presets), d_model=16, heads=4, seed=0)


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


def shot(browser: Chromium, folder: Path, name: str, width: int) -> Path:
    """Save a full-page PNG and check it is the page as laid out at ``width``."""
    path = browser.screenshot(folder / f"{name}.png")
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    image_width, image_height = struct.unpack(">II", header[16:24])
    # The page is as wide as the window, less a scroll bar if one is shown.
    assert width - 20 <= image_width <= width
    assert image_height >= 300
    return path


def shape_text(trace: dict, stage: str) -> str:
    return f"({', '.join(STAGES[stage])}) = ({', '.join(map(str, trace['shapes'][stage]))})"


def number(value: float) -> str:
    return f"{value:.3f}".replace("-", "\u2212")


def js(browser: Chromium, expression: str):
    return browser.evaluate(expression)


def choose_heads(browser: Chromium, count: int) -> None:
    browser.click(f'input[name="heads"][value="{count}"]')


def texts_of(browser: Chromium, selector: str) -> list[str]:
    return js(browser, f"[...document.querySelectorAll({json.dumps(selector)})].map((n) => n.textContent)")


def test_the_harness_fails_on_console_errors(page):
    js(page, "console.error('deliberate'); setTimeout(() => { throw new Error('thrown on purpose'); }); 1")
    time.sleep(0.2)
    errors = page.console_errors()
    assert any("deliberate" in error for error in errors)
    assert any("thrown on purpose" in error for error in errors)
    page.events.clear()  # this test's own errors are expected


def test_global_view_labels_every_shape_with_python_values(page, python_data, screenshots):
    assert js(page, "document.querySelector('#panel-global').hidden") is False
    for heads in (4, 8):
        choose_heads(page, heads)
        trace = python_data["sentences"][0]["traces"][str(heads)]
        shown = js(page, "Object.fromEntries([...document.querySelectorAll('#panel-global .shape[data-stage]')]"
                         ".map((n) => [n.dataset.stage, n.textContent]))")
        expected_stages = set(STAGES) - {"scores", "scaled_scores"}  # drawn in the local and dynamic views
        assert set(shown) == expected_stages
        for stage, text in shown.items():
            assert text == shape_text(trace, stage), stage
        assert len(texts_of(page, "#panel-global table.lanes tbody tr")) == heads
        captions = texts_of(page, '#panel-global [data-role="global-head"] .caption')
        assert captions == [f"entropy {value:.2f} bits" for value in trace["entropy_bits"]]
    shot(page, screenshots, "global-desktop", 1366)


def test_no_view_shows_a_stray_null_or_undefined(page):
    for mode in ("global", "local", "dynamic", "static"):
        page.click(f"#tab-{mode}")
        text = js(page, f"document.querySelector('#panel-{mode}').innerText")
        assert not re.search(r"\b(null|undefined|NaN)\b", text), (mode, text[:300])
    page.click("#tab-global")


def test_heads_offer_only_divisors_and_say_why(page):
    values = js(page, "[...document.querySelectorAll('input[name=heads]')].map((n) => Number(n.value))")
    assert values == [1, 2, 4, 8, 16]
    why = js(page, "document.querySelector('#heads-why').textContent")
    assert "H must divide 16: 1, 2, 4, 8, 16" in why and "16 / 3 = 5.33" in why


def test_static_view_draws_one_heatmap_per_head(page, python_data, screenshots):
    page.click("#tab-static")
    assert js(page, "document.querySelector('#tab-static').getAttribute('aria-selected')") == "true"
    for heads in python_data["head_options"]:
        choose_heads(page, heads)
        trace = python_data["sentences"][0]["traces"][str(heads)]
        assert js(page, "document.querySelectorAll('#panel-static [data-role=heatmap]').length") == heads
        captions = texts_of(page, "#panel-static [data-role=heatmap] .caption")
        assert captions == [f"head {index} · entropy {value:.2f} bits"
                            for index, value in enumerate(trace["entropy_bits"])]
        rows = js(page, "[...document.querySelectorAll('#panel-static [data-role=heatmap] svg')]"
                        ".map((n) => [Number(n.dataset.rows), Number(n.dataset.columns)])")
        assert rows == [[5, 5]] * heads
        if heads == 4:
            shot(page, screenshots, "static-desktop", 1366)


def test_local_view_numbers_match_python(page, python_data, screenshots):
    page.click("#tab-local")
    page.click('input[name="local-head"][value="1"]')  # head 2
    page.click('input[name="local-query"][value="2"]')  # the query "chases"
    stages = python_data["sentences"][0]["traces"]["4"]["stages"]
    for column, stage in (("score", "scores"), ("scaled", "scaled_scores"), ("weight", "weights")):
        shown = texts_of(page, f'#local-table tbody td[data-column="{column}"]')
        assert shown == [number(value) for value in stages[stage][1][2]], column
    assert js(page, "document.querySelector('[data-column=weight-total]').textContent") == "1.000"
    output = js(page, "document.querySelector('#local-output').textContent")
    assert output == "[" + ", ".join(number(value) for value in stages["head_outputs"][1][2]) + "]"
    assert "√4 = 2.000" in js(page, "document.querySelector('#local-scale-note').textContent")
    shot(page, screenshots, "local-desktop", 1366)


def test_global_head_opens_the_local_view(page):
    page.click('[data-role="global-head"][data-head="2"]')  # heads numbered from 0
    assert js(page, "document.querySelector('#panel-local').hidden") is False
    assert js(page, "document.querySelector('input[name=local-head]:checked').value") == "2"


def test_dynamic_view_steps_plays_and_pauses(page, python_data, screenshots):
    page.click("#tab-dynamic")
    counter = "document.querySelector('#step-counter').textContent"
    assert js(page, counter) == "step 1 of 13"
    page.press("ArrowRight")  # straight after the click: the arrow steps, it does not switch tabs
    assert js(page, "document.querySelector('[role=tab][aria-selected=true]').id") == "tab-dynamic"
    assert js(page, counter) == "step 2 of 13"
    page.press("ArrowLeft")
    assert js(page, counter) == "step 1 of 13"
    page.click("#step-forward")
    page.click("#step-forward")
    assert js(page, counter) == "step 3 of 13"
    assert js(page, "document.querySelector('#dynamic-stage-name').textContent") == "Keys K = X W_K"
    trace = python_data["sentences"][0]["traces"]["4"]
    assert js(page, "document.querySelector('.stage-view .shape').textContent") == shape_text(trace, "keys")
    page.click("#step-back")
    assert js(page, counter) == "step 2 of 13"
    js(page, "document.querySelector('#panel-dynamic').focus()")
    page.press("ArrowRight")
    assert js(page, counter) == "step 3 of 13"
    page.press("End")
    assert js(page, "document.querySelector('.stage-view').dataset.stage") == "output"
    page.press("Home")
    assert js(page, counter) == "step 1 of 13"
    js(page, "const s = document.querySelector('#speed'); s.value = '4'; s.dispatchEvent(new Event('change')); 1")
    page.click("#play")
    assert js(page, "document.querySelector('#play').getAttribute('aria-pressed')") == "true"
    deadline = time.monotonic() + 6
    while js(page, "document.querySelector('.stage-view').dataset.stage") in ("inputs", "queries") \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    page.click("#play")  # pause
    paused_at = js(page, counter)
    assert paused_at not in ("step 1 of 13", "step 2 of 13")
    time.sleep(0.8)  # longer than one step at 4x
    assert js(page, counter) == paused_at
    assert js(page, "document.querySelector('#play').getAttribute('aria-pressed')") == "false"
    page.click('[data-key="goto-9"]')
    assert js(page, "document.querySelectorAll('.stage-view [data-role]').length + "
                    "document.querySelectorAll('.stage-view .head-figure').length") == 4
    shot(page, screenshots, "dynamic-desktop", 1366)


def test_everything_is_reachable_by_keyboard(page):
    for _ in range(40):
        page.press("Tab")
        if js(page, "document.activeElement.id") == "tab-global":
            break
    else:
        pytest.fail("Tab never reached the view tabs")
    assert js(page, "getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.press("ArrowRight")
    assert js(page, "[document.activeElement.id, document.querySelector('#panel-local').hidden]") == ["tab-local", False]
    page.press("End")
    assert js(page, "document.activeElement.id") == "tab-static"
    js(page, "document.querySelector('input[name=heads][value=\"4\"]').focus()")
    page.press("ArrowRight")  # radio buttons move with the arrow keys
    assert js(page, "document.querySelectorAll('#panel-static [data-role=heatmap]').length") == 8
    page.press("Home")
    js(page, "document.querySelector('button.language[data-lang=zh]').focus()")
    page.press("Enter")
    assert js(page, "document.documentElement.lang") == "zh-Hans"


def test_language_switch_changes_every_text(page, screenshots):
    texts = load_viz_texts()
    page.click('button.language[data-lang="zh"]')
    assert js(page, "document.querySelector('h1').textContent") == texts.text("page.title", "zh")
    assert js(page, "document.title") == texts.text("page.title", "zh")
    assert texts_of(page, '[role="tab"]') == [texts.text(f"mode.{mode}.name", "zh")
                                             for mode in ("global", "local", "dynamic", "static")]
    page.click("#tab-static")
    assert texts_of(page, "#panel-static [data-role=heatmap] .caption")[0].startswith("头 0 · 熵 ")
    assert "必须整除 16" in js(page, "document.querySelector('#heads-why').textContent")
    shot(page, screenshots, "static-chinese", 1366)
    page.click('button.language[data-lang="en"]')
    assert js(page, "document.querySelector('#tab-static').textContent") == "Static"


def test_sentence_presets_switch_the_data(page, python_data):
    options = texts_of(page, "#sentence option")
    assert options == [entry["text"] for entry in python_data["sentences"]]
    index = options.index("猫 追 老鼠")
    js(page, f"const s = document.querySelector('#sentence'); s.value = '{index}';"
             " s.dispatchEvent(new Event('change')); 1")
    choose_heads(page, 16)
    trace = python_data["sentences"][index]["traces"]["16"]
    shown = js(page, "document.querySelector('#panel-global .shape[data-stage=weights]').textContent")
    assert shown == shape_text(trace, "weights") == "(B, H, T, S) = (1, 16, 3, 3)"
    page.click("#tab-static")
    labels = texts_of(page, "#panel-static [data-role=heatmap]:first-child svg text")
    assert {"猫", "追", "老鼠"} <= set(labels)


@pytest.mark.parametrize("mode", ["global", "local", "dynamic", "static"])
def test_each_view_fits_a_phone(page, screenshots, mode):
    page.resize(375, 740, mobile=True)
    page.open(js(page, "location.href"))
    page.click(f"#tab-{mode}")
    assert js(page, "document.documentElement.scrollWidth <= window.innerWidth"), \
        js(page, "[document.documentElement.scrollWidth, window.innerWidth]")
    assert js(page, "document.querySelector('#sentence').getBoundingClientRect().right <= window.innerWidth")
    shot(page, screenshots, f"{mode}-phone", 375)


def test_print_shows_the_view_without_controls(page):
    page.click("#tab-static")
    page.page("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        assert js(page, "getComputedStyle(document.querySelector('.controls')).display") == "none"
        assert js(page, "getComputedStyle(document.querySelector('#panel-static')).display") != "none"
    finally:
        page.page("Emulation.setEmulatedMedia", {"media": ""})


@pytest.mark.parametrize("width", [1280, 1100, 1366, 800, 375])
def test_every_arrow_of_the_pipeline_points_at_the_next_block(page, width):
    """An arrow ends no row: the block it points to sits beside it (or below it, where the pipeline stacks)."""
    page.resize(width, 900)
    page.open(js(page, "location.href"))
    page.click("#tab-global")
    loose = js(page, """[...document.querySelectorAll('#panel-global .pipeline .arrow')].filter(arrow => {
        const next = arrow.nextElementSibling, a = arrow.getBoundingClientRect();
        if (!next) return true;
        const b = next.getBoundingClientRect();
        const beside = b.left >= a.right - 1 && b.top < a.bottom && b.bottom > a.top;
        const below = b.top >= a.bottom - 1 && b.left < a.right && b.right > a.left;
        return !(beside || below);
    }).map(arrow => arrow.nextElementSibling && arrow.nextElementSibling.textContent.slice(0, 40))""")
    assert loose == [], loose
    assert js(page, "document.querySelectorAll('#panel-global .pipeline .arrow').length") == 4


def test_a_table_wider_than_a_phone_scrolls_with_a_cue(page, screenshots):
    """At 375 px the heads table is wider than its box: it scrolls inside it, and a shadow shows more is there."""
    page.resize(375, 740, mobile=True)
    page.open(js(page, "location.href"))
    page.click("#tab-global")
    wrap = "document.querySelector('#panel-global .table-wrap')"
    assert js(page, f"{wrap}.scrollWidth > {wrap}.clientWidth"), "the heads table fits: no cue needed"
    assert js(page, f"getComputedStyle({wrap}).overflowX") == "auto"
    layers = js(page, f"getComputedStyle({wrap}).backgroundAttachment")
    assert "radial-gradient" in js(page, f"getComputedStyle({wrap}).backgroundImage") and "scroll" in layers, layers
    assert js(page, "document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, screenshots, "global-phone-scroll-cue", 375)
