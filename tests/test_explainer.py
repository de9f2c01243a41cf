"""The explainer page's data and file, without a browser (see test_demo_browser.py for that)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

from grader.cli import root
from grader.errors import UsageError
from grader.viz.explainer import ASSETS_DIR, SCRIPTS, explainer_data, render_page, write_explainer
from grader.viz.texts import load_viz_texts
from grader.viz.trace import STAGES, trace_sentence

DATA_BLOCK = re.compile(r'<script type="application/json" id="mha-data">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def data() -> dict:
    return explainer_data(sentences=["the cat chases the mouse", "猫 追 老鼠"], d_model=16, heads=4)


def test_data_holds_a_trace_per_sentence_and_divisor(data):
    assert data["head_options"] == [1, 2, 4, 8, 16]
    assert data["non_divisor_example"] == 3
    assert data["stage_order"] == list(STAGES)
    chinese = data["sentences"][1]
    assert chinese["tokens"] == ["猫", "追", "老鼠"]
    assert sorted(chinese["traces"], key=int) == ["1", "2", "4", "8", "16"]
    trace = trace_sentence(sentence="猫 追 老鼠", d_model=16, num_heads=8)
    embedded = chinese["traces"]["8"]
    assert embedded["sizes"] == {"B": 1, "H": 8, "T": 3, "S": 3, "D": 16, "d_k": 2}
    assert embedded["shapes"]["weights"] == [1, 8, 3, 3]
    np.testing.assert_allclose(embedded["stages"]["weights"], trace.head_weights(), atol=5e-5)
    np.testing.assert_allclose(embedded["stages"]["output"], trace.stages["output"][0], atol=5e-5)


def test_page_is_one_self_contained_file(data):
    page = render_page(data)
    assert 'http-equiv="Content-Security-Policy"' in page and "default-src 'none'" in page
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", page)
    # The only URL on the page is the SVG namespace name, which is never fetched.
    assert set(re.findall(r"https?://[^\s\"'`)]+", page)) == {"http://www.w3.org/2000/svg"}
    embedded = json.loads(DATA_BLOCK.search(page).group(1))
    assert embedded == json.loads(json.dumps(data))
    for name in SCRIPTS:
        assert (ASSETS_DIR / name).read_text(encoding="utf-8").strip()[-200:] in page


def test_a_sentence_cannot_end_the_data_block_early():
    data = explainer_data(sentences=["a </script> b"], d_model=4, heads=2)
    page = render_page(data)
    assert "</script> b" not in page
    assert json.loads(DATA_BLOCK.search(page).group(1))["sentences"][0]["tokens"] == ["a", "</script>", "b"]


def test_every_text_the_page_asks_for_exists(data):
    keys = set(data["texts"])
    sources = "".join((ASSETS_DIR / name).read_text(encoding="utf-8") for name in (*SCRIPTS, "page.html"))
    asked = set(re.findall(r'\bt\("([a-z_.]+)"', sources)) | set(re.findall(r'data-t="([a-z_.]+)"', sources))
    asked |= {f"mode.local.{column}" for column in ("column_key", "column_score", "column_scaled", "column_weight")}
    asked |= {f"stage.{stage}.{part}" for stage in STAGES for part in ("name", "about")}
    assert asked and not asked - keys, sorted(asked - keys)
    assert all(set(value) == {"en", "zh"} for value in data["texts"].values())


def test_write_explainer_and_its_refusals(tmp_path):
    page = write_explainer(out=tmp_path / "page.html", sentences=["one two three"], d_model=8, heads=2)
    assert page.sentences[0] == "one two three"
    assert page.sentences[1:] == load_viz_texts().presets
    assert page.head_options == (1, 2, 4, 8)
    assert page.size_bytes == len((tmp_path / "page.html").read_bytes())
    with pytest.raises(UsageError, match=r"\.html"):
        write_explainer(out=tmp_path / "page.png")
    with pytest.raises(UsageError, match="Valid head counts for D = 16: 1, 2, 4, 8, 16"):
        write_explainer(out=tmp_path / "page.html", heads=6)
    with pytest.raises(UsageError, match="between 2 and 32"):
        write_explainer(out=tmp_path / "page.html", d_model=64, heads=4)
    with pytest.raises(UsageError, match="13 tokens"):
        write_explainer(out=tmp_path / "page.html", sentences=[" ".join("w" * n for n in range(1, 14))])


def test_demo_cli_reports_json(tmp_path):
    result = CliRunner().invoke(root, ["demo", "--out", str(tmp_path / "e.html"), "--json", "--lang", "zh"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["path"] == str(tmp_path / "e.html") and report["head_options"] == [1, 2, 4, 8, 16]
    assert '<html lang="zh-Hans">' in (tmp_path / "e.html").read_text(encoding="utf-8")


def test_demo_cli_refuses_a_non_divisor(tmp_path):
    result = CliRunner().invoke(root, ["demo", "--heads", "5", "--out", str(tmp_path / "e.html")])
    assert result.exit_code == 2
    assert "mha: --heads 5 does not divide --d-model 16" in result.stderr
    assert not (tmp_path / "e.html").exists()


def test_demo_help():
    result = CliRunner().invoke(root, ["demo", "--help"])
    assert result.exit_code == 0 and "--sentence" in result.output and "four views" in result.output.lower()


@pytest.mark.slow
def test_installed_command_writes_the_page(tmp_path):
    command = shutil.which("mha")
    assert command, "the mha command is not installed (pip install -e .)"
    done = subprocess.run([command, "demo", "--out", str(tmp_path / "e.html"), "--lang", "en"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and (tmp_path / "e.html").stat().st_size > 10_000
