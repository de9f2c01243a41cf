"""`mha viz`: per-head heatmaps, head similarity, flagged submission heads, texts."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import PROJECT, require
from grader.cli import root
from grader.errors import ChecksFailed, ContentError, UsageError
from grader.paths import solution_path
from grader.viz.draw import compute_head_maps, draw_attention, make_figures, show_heads
from grader.viz.maps import HeadMaps, alike_pairs, find_head_problems, head_entropy, head_similarity, most_alike_pair
from grader.viz.texts import load_viz_texts
from grader.viz.trace import trace_sentence

SENTENCE = "the cat chases the mouse"
HAS_SANDBOX = importlib.util.find_spec("grader.sandbox.client") is not None


def heatmap_axes(figure):
    """The axes that show a head (colour bars have no tick labels on both axes)."""
    return [axis for axis in figure.axes if axis.get_visible() and axis.images and axis.get_xticklabels()
            and axis.get_yticklabels() and axis.get_label() != "<colorbar>"]


@pytest.fixture(scope="module")
def reference_maps() -> HeadMaps:
    maps, _ = compute_head_maps(sentence=SENTENCE, num_heads=4)
    return maps


def test_figure_has_one_fixed_scale_heatmap_per_head_titled_with_entropy(reference_maps):
    weights_figure, similarity_figure, warned = make_figures(reference_maps, sentence=SENTENCE, subset=None, lang="en")
    axes = heatmap_axes(weights_figure)
    assert len(axes) == 4 and warned == ()
    trace = trace_sentence(sentence=SENTENCE, num_heads=4)
    entropies = head_entropy(trace.head_weights())
    for head, axis in enumerate(axes):
        image = axis.images[0]
        assert image.get_clim() == (0.0, 1.0)
        assert image.get_cmap().name.startswith("viridis")
        np.testing.assert_allclose(image.get_array(), trace.head_weights()[head])
        assert [label.get_text() for label in axis.get_xticklabels()] == SENTENCE.split()
        assert (axis.get_xlabel(), axis.get_ylabel()) == ("key", "query")
        assert axis.get_title() == f"head {head}\nentropy {entropies[head]:.2f} bits"
    similarity_image = similarity_figure.axes[0].images[0]
    assert similarity_image.get_array().shape == (4, 4)


def test_entropy_is_mean_row_entropy_in_bits():
    uniform = np.full((1, 3, 4), 0.25)
    one_hot = np.zeros((1, 3, 4))
    one_hot[..., 2] = 1.0
    np.testing.assert_allclose(head_entropy(np.concatenate([uniform, one_hot])), [2.0, 0.0])


def test_similarity_is_one_for_identical_heads_zero_for_disjoint_and_nan_for_invalid():
    first = np.zeros((2, 3))
    first[:, 0] = 1.0
    second = np.zeros((2, 3))
    second[:, 2] = 1.0
    invalid = np.full((2, 3), 0.5)  # rows sum to 1.5
    similarity = head_similarity(np.stack([first, first, second, invalid]))
    np.testing.assert_allclose(similarity[:3, :3], [[1, 1, 0], [1, 1, 0], [0, 0, 1]], atol=1e-12)
    assert np.isnan(similarity[3]).all() and np.isnan(similarity[:, 3]).all()
    assert most_alike_pair(similarity) == {"first": 0, "second": 1, "similarity": 1.0}  # heads numbered from 0
    assert alike_pairs(similarity) == [[0, 1]]


def test_head_problems_name_what_is_wrong():
    good = np.full((1, 4, 3, 3), 1 / 3)  # (B, H, T, S)
    bad = good.copy()
    bad[0, 0, 1, 1] = np.nan
    bad[0, 1, 0] = [1.5, -0.5, 0.0]
    bad[0, 2] *= 2.0
    reference = good[0].copy()
    reference[3, 0] = [0.5, 0.25, 0.25]
    problems, maps = find_head_problems(bad, expected_shape=(1, 4, 3, 3), reference=reference)
    assert [problem.kind for problem in problems] == ["not_finite", "negative", "rows_not_normalized", "differs"]
    assert problems[2].fields == {"low": "2", "high": "2"}
    assert maps.shape == (4, 3, 3)
    problems, maps = find_head_problems(good[:, :, 0], expected_shape=(1, 4, 3, 3))
    assert {problem.kind for problem in problems} == {"wrong_shape"} and len(problems) == 4
    assert np.isnan(maps).all()
    texts = load_viz_texts()
    assert problems[0].describe(texts, "en") == "weights have shape (1, 4, 3); expected (B, H, T, S) = (1, 4, 3, 3)"
    assert find_head_problems(good, expected_shape=(1, 4, 3, 3), reference=good[0])[0] == (None,) * 4


def test_flagged_heads_are_marked_in_the_figure():
    weights = np.full((1, 2, 3, 3), 1 / 3)
    weights[0, 1] *= 3.0
    problems, maps = find_head_problems(weights, expected_shape=(1, 2, 3, 3))
    head_maps = HeadMaps(("a", "b", "c"), maps, "alice.py", problems)
    figure, _, _ = make_figures(head_maps, sentence="a b c", subset=None, lang="en")
    good_axis, flagged_axis = heatmap_axes(figure)
    assert not good_axis.get_title().startswith("[!]")
    assert flagged_axis.get_title().startswith("[!] head 1\nrows do not sum to 1")
    assert flagged_axis.spines["left"].get_linewidth() == 3
    assert "submission alice.py" in figure.get_suptitle()
    assert head_maps.to_dict()["entropy_bits"][1] is None


def test_chinese_sentence_uses_a_cjk_font_without_missing_glyphs(tmp_path):
    from grader.viz.heatmaps import find_cjk_font

    require(find_cjk_font() is not None, "no CJK font is installed (Debian: apt install fonts-noto-cjk); "
                                         "the fallback is tested below")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = draw_attention(sentence="猫 追 老鼠", num_heads=2, out=tmp_path / "zh.png", lang="zh")
    assert not [str(warning.message) for warning in caught if "missing from" in str(warning.message)]
    assert result.warnings == ()
    assert result.maps.tokens == ("猫", "追", "老鼠")
    figure, _, _ = make_figures(result.maps, sentence="猫 追 老鼠", subset=None, lang="zh")
    axis = heatmap_axes(figure)[0]
    assert [label.get_text() for label in axis.get_yticklabels()] == ["猫", "追", "老鼠"]
    assert axis.get_ylabel() == "查询" and axis.get_title().startswith("头 0")


def test_without_a_cjk_font_tokens_fall_back_to_positions(monkeypatch, reference_maps):
    monkeypatch.setattr("grader.viz.heatmaps.find_cjk_font", lambda: None)
    maps, _ = compute_head_maps(sentence="猫 追 老鼠", num_heads=2)
    figure, _, warned = make_figures(maps, sentence="猫 追 老鼠", subset=None, lang="zh")
    axis = heatmap_axes(figure)[0]
    assert [label.get_text() for label in axis.get_xticklabels()] == ["#1", "#2", "#3"]
    assert axis.get_ylabel() == "query"  # Chinese texts cannot be drawn either
    assert len(warned) == 1 and "fonts-noto-cjk" in warned[0]
    assert any("positions only" in text.get_text() for text in figure.texts)


def test_png_svg_and_exported_numbers(tmp_path):
    result = draw_attention(sentence=SENTENCE, num_heads=2, out=tmp_path / "heads.svg", export=tmp_path / "data.json")
    assert [path.name for path in result.files] == ["heads.svg", "heads-similarity.svg", "data.json"]
    assert "<svg" in (tmp_path / "heads.svg").read_text()[:2000]
    data = json.loads((tmp_path / "data.json").read_text())
    trace = trace_sentence(sentence=SENTENCE, num_heads=2)
    np.testing.assert_allclose(data["maps"]["weights"], trace.head_weights())
    np.testing.assert_allclose(data["maps"]["entropy_bits"], head_entropy(trace.head_weights()))
    assert [stage["name"] for stage in data["trace"]["stages"]][-1] == "output"
    result = draw_attention(sentence=SENTENCE, num_heads=2, out=tmp_path / "heads.png", export=tmp_path / "data.npz")
    assert (tmp_path / "heads-similarity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with np.load(tmp_path / "data.npz", allow_pickle=False) as archive:
        np.testing.assert_allclose(archive["weights"], trace.head_weights())
        assert list(archive["tokens"]) == SENTENCE.split()


def test_heads_subset_and_refusals(reference_maps):
    maps, _ = compute_head_maps(sentence=SENTENCE, num_heads=8)
    figure, _, _ = make_figures(maps, sentence=SENTENCE, subset=(1, 3), lang="en")
    assert [axis.get_title().split("\n")[0] for axis in heatmap_axes(figure)] == ["head 1", "head 3"]
    with pytest.raises(UsageError, match="at most 16"):
        draw_attention(sentence=SENTENCE, d_model=32, num_heads=32)
    with pytest.raises(UsageError, match="between 0 and 3"):
        draw_attention(sentence=SENTENCE, num_heads=4, heads_subset="2-7")
    with pytest.raises(UsageError, match="readable up to 20"):
        draw_attention(sentence=" ".join(f"w{index}" for index in range(21)))
    with pytest.raises(UsageError, match=r"\.png, \.svg or \.pdf"):
        draw_attention(out=Path("heads.gif"))


def test_notebook_helper_returns_both_figures():
    weights_figure, similarity_figure = show_heads("a b c", heads=2)
    assert len(heatmap_axes(weights_figure)) == 2
    assert similarity_figure.axes[0].images[0].get_array().shape == (2, 2)


@pytest.mark.parametrize("heads, sentence", [(4, "the cat sat on the mat"), (8, "a b c d e f g h i j")])
def test_the_head_titles_read_as_large_as_the_similarity_figure_in_a_notebook(heads, sentence):
    """A notebook shrinks a figure wider than its output area to fit (NOTEBOOK_WIDTH), and the text with it:
    the per-head titles and the notes under the heads, shown so, are no smaller than the similarity figure's."""
    from grader.viz.heatmaps import NOTEBOOK_WIDTH

    weights_figure, similarity_figure = make_figures(
        compute_head_maps(sentence=sentence, d_model=16, num_heads=heads, seed=0)[0], sentence=sentence,
        subset=None, lang="en")[:2]

    def shown(figure, points):  # points as they read in the output area
        return points * min(1.0, NOTEBOOK_WIDTH / figure.get_figwidth())

    head_title = min(axis.title.get_fontsize() for axis in heatmap_axes(weights_figure))
    similarity_title = similarity_figure.axes[0].title.get_fontsize()
    assert shown(weights_figure, head_title) >= 0.95 * shown(similarity_figure, similarity_title)
    notes = [text.get_fontsize() for text in weights_figure.texts]
    similarity_notes = [text.get_fontsize() for text in similarity_figure.texts]
    assert shown(weights_figure, min(notes)) >= 0.95 * shown(similarity_figure, min(similarity_notes))


def test_cli_writes_figures_and_reports_json(tmp_path):
    result = CliRunner().invoke(root, ["viz", "--heads", "2", "--out", str(tmp_path / "h.png"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["num_heads"] == 2 and data["seed"] == 0
    assert data["files"] == [str(tmp_path / "h.png"), str(tmp_path / "h-similarity.png")]


def test_cli_refuses_heads_that_do_not_divide_d_model():
    result = CliRunner().invoke(root, ["viz", "--heads", "3"])
    assert result.exit_code == 2
    assert "Valid head counts for D = 16: 1, 2, 4, 8, 16" in result.stderr


def test_viz_help():
    result = CliRunner().invoke(root, ["viz", "--help"])
    assert result.exit_code == 0 and "--heads-subset" in result.output


@pytest.mark.slow
def test_installed_command_draws_the_heads(tmp_path):
    command = shutil.which("mha")
    assert command, "the mha command is not installed (pip install -e .)"
    done = subprocess.run([command, "viz", "--heads", "2", "--lang", "en", "--out", str(tmp_path / "h.png")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and (tmp_path / "h-similarity.png").is_file()


def test_a_malformed_text_file_is_named(tmp_path):
    bad = tmp_path / "viz.toml"
    bad.write_text('schema_version = 1\n[figure]\nquery.en = "query {x}"\nquery.zh = "查询"\n', encoding="utf-8")
    with pytest.raises(ContentError, match=r"viz\.toml: figure\.query has different placeholders"):
        load_viz_texts(bad)
    bad.write_text('schema_version = 1\n[figure]\nquery.en = "query"\n', encoding="utf-8")
    with pytest.raises(ContentError, match="figure.query must have exactly the languages"):
        load_viz_texts(bad)


# ---- a student's submission, run in the sandboxed worker ------------------------

def submission(tmp_path: Path, name: str, old: str = "", new: str = "") -> Path:
    """The reference with one line replaced: a named, controlled mistake."""
    source = solution_path().read_text(encoding="utf-8")
    if old:
        assert old in source, f"the reference no longer contains {old!r}"
        source = source.replace(old, new)
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return path


SOFTMAX_LINE = "weights = softmax(scores)  # (B, H, T, S), rows sum to 1 over S"


@pytest.mark.skipif(not HAS_SANDBOX, reason="grader.sandbox.client is not importable yet")
def test_submission_heads_are_checked_against_the_reference(tmp_path):
    good, _ = compute_head_maps(sentence=SENTENCE, num_heads=4, file=submission(tmp_path, "good"))
    assert good.problems == (None,) * 4 and good.source == "good.py"
    np.testing.assert_allclose(good.weights, trace_sentence(sentence=SENTENCE).head_weights(), atol=1e-12)
    wrong_axis = submission(tmp_path, "wrong_axis", SOFTMAX_LINE,
                            "weights = np.exp(scores) / np.exp(scores).sum(axis=-2, keepdims=True)")
    maps, _ = compute_head_maps(sentence=SENTENCE, num_heads=4, file=wrong_axis)
    assert {problem.kind for problem in maps.problems} == {"rows_not_normalized"}
    scores = submission(tmp_path, "scores", SOFTMAX_LINE, "weights = scores")
    assert "negative" in {problem.kind for problem in compute_head_maps(
        sentence=SENTENCE, num_heads=4, file=scores)[0].problems}
    unscaled = submission(tmp_path, "unscaled", "/ np.sqrt(d_k)", "")
    assert {problem.kind for problem in compute_head_maps(
        sentence=SENTENCE, num_heads=4, file=unscaled)[0].problems} == {"differs"}


@pytest.mark.skipif(not HAS_SANDBOX, reason="grader.sandbox.client is not importable yet")
def test_submission_without_weights_or_that_fails_is_reported(tmp_path):
    no_weights = submission(tmp_path, "no_weights", "if return_weights:", "if False:")
    maps, _ = compute_head_maps(sentence=SENTENCE, num_heads=2, file=no_weights)
    assert [problem.kind for problem in maps.problems] == ["wrong_shape", "wrong_shape"]
    assert maps.problems[0].fields["got"] == (1, 5, 16)
    broken = tmp_path / "broken.py"
    broken.write_text("def softmax(x:\n", encoding="utf-8")
    with pytest.raises(ChecksFailed, match="SyntaxError"):
        compute_head_maps(sentence=SENTENCE, file=broken)
    result = CliRunner().invoke(root, ["viz", str(no_weights), "--heads", "2", "--out", str(tmp_path / "s.png")])
    assert result.exit_code == 0, result.output
    assert "head 0: weights have shape (1, 5, 16)" in result.stdout
    result = CliRunner().invoke(root, ["viz", str(broken), "--out", str(tmp_path / "b.png")])
    assert result.exit_code == 1 and "SyntaxError" in result.stderr


def without_reference(tmp_path: Path, exercise: str | None) -> tuple[Path, dict]:
    """A student's folder (``exercises/multihead_attention.py`` holding ``exercise``) and an environment in
    which the reference is not installed, as in a student release: the real loader finds no solutions."""
    import os

    folder = tmp_path / "student"
    if exercise is not None:
        (folder / "exercises").mkdir(parents=True)
        (folder / "exercises" / "multihead_attention.py").write_text(exercise, encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MHA_SOLUTIONS": str(tmp_path / "no-solutions"), "LANG": "C.UTF-8"}
    return folder, env


def run_mha(*args, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    require(shutil.which("mha") is not None, "the mha command is not installed (pip install -e .)")
    return subprocess.run(["mha", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_without_the_reference_a_submission_is_drawn_unchecked(tmp_path):
    unscaled = submission(tmp_path, "unscaled", "/ np.sqrt(d_k)", "")
    folder, env = without_reference(tmp_path, None)
    done = run_mha("viz", str(unscaled), "--heads", "2", "--json", "--out", "heads.png", cwd=folder, env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    maps = json.loads(done.stdout)
    assert maps["source"] == "unscaled.py" and (folder / "heads.png").is_file()
    assert "reference_weights" not in maps or maps["reference_weights"] is None


def test_without_the_reference_mha_viz_draws_the_students_own_exercise(tmp_path):
    folder, env = without_reference(tmp_path, solution_path().read_text(encoding="utf-8"))
    done = run_mha("viz", "--out", "heads.png", cwd=folder, env=env)
    assert done.returncode == 0, done.stderr
    assert "no reference implementation, so your own exercises/multihead_attention.py is drawn" in done.stderr
    assert (folder / "heads.png").is_file() and (folder / "heads-similarity.png").is_file()
    chinese = run_mha("viz", "--out", "zh.png", "--lang", "zh", cwd=folder, env=env)
    assert chinese.returncode == 0 and "画的是你自己的 exercises/multihead_attention.py" in chinese.stderr


def test_without_the_reference_the_stub_and_a_missing_file_get_a_sentence(tmp_path):
    stub = (PROJECT / "exercises" / "multihead_attention.py").read_text(encoding="utf-8")
    folder, env = without_reference(tmp_path, stub)
    done = run_mha("viz", "--out", "heads.png", cwd=folder, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "forward is not written yet" in done.stderr and not (folder / "heads.png").exists()
    empty, env = without_reference(tmp_path / "other", None)
    env["MHA_EXERCISES"] = str(tmp_path / "no-exercises")  # an installed release has no checkout's stubs
    done = run_mha("viz", "--out", "heads.png", cwd=empty, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no reference implementation to draw" in done.stderr and "mha viz exercises/multihead_attention.py" in done.stderr


def test_without_the_reference_the_trace_raises_a_config_error_naming_the_fix(tmp_path):
    folder, env = without_reference(tmp_path, None)
    code = ("from grader.viz.trace import trace_sentence\n"
            "from grader.errors import ConfigError\n"
            "try:\n    trace_sentence(sentence='the cat')\n"
            "except ConfigError as error:\n    print('ConfigError:', error)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ConfigError: the reference solution of multihead_attention is not part of")
    assert "MHA_SOLUTIONS" in done.stdout


@pytest.mark.slow
def test_notebook_helper_shows_both_figures_inline_in_a_kernel():
    from grader.viz.heatmaps import find_cjk_font

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    # Without the font the helper rightly prints its Chinese fallback notice first (tested above).
    require(find_cjk_font() is not None, "no CJK font is installed (Debian: apt install fonts-noto-cjk)")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(
        'from grader.viz.draw import show_heads\nshow_heads("猫 追 老鼠", heads=2, lang="zh")')]
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = notebook.cells[0].outputs
    assert [output.output_type for output in outputs] == ["display_data", "display_data"]
    assert all("image/png" in output.data for output in outputs)


def test_chinese_notes_wrap_between_characters_but_never_before_closing_punctuation():
    from grader.viz.heatmaps import wrap

    note = "相似度 = 1 − 两个头对应行之间的 Jensen–Shannon 距离，再对所有查询取平均。一个头"
    for width in range(6, 30):
        lines = wrap(note, 2 * width, "zh").split("\n")
        assert "".join(lines).replace(" ", "") == note.replace(" ", "")
        assert not any(line[:1] in "，。；：" for line in lines)
        assert any("Jensen–Shannon" in line for line in lines)  # a Latin word stays whole
