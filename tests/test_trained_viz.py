"""`mha viz --trained` and `--ablate`: the trained model's heads by layer, labelled by role, and the ablation."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from grader.cli import root
from grader.errors import UsageError
from grader.tinymodel.model import TinyTransformer
from grader.tinymodel.roles import CHANCE_LOSS, head_roles, probe_batch, task_score
from grader.tinymodel.store import shipped_model
from grader.tinymodel.vocabulary import encode
from grader.viz.trained import ablation_report, load_trained_texts, role_text, trained_maps
from grader.viz.trained_views import make_trained_figures

SENTENCE = "q x m a r k e t m a r k e t"


def heatmap_axes(figure):
    return [axis for axis in figure.axes if axis.images and axis.get_xticklabels() and axis.get_label() != "<colorbar>"]


def swapped_heads(trained, layer: int, first: int, second: int):
    """The same model with two heads of one layer trading places (their blocks of W_Q, W_K, W_V, W_O)."""
    parameters = {name: value.copy() for name, value in trained.model.parameters.items()}
    d_k = trained.model.config.d_k
    a, b = slice(first * d_k, (first + 1) * d_k), slice(second * d_k, (second + 1) * d_k)
    for name in ("W_Q", "W_K", "W_V"):
        matrix = parameters[f"layer{layer}.{name}"]
        matrix[:, a], matrix[:, b] = matrix[:, b].copy(), matrix[:, a].copy()
    matrix = parameters[f"layer{layer}.W_O"]
    matrix[a], matrix[b] = matrix[b].copy(), matrix[a].copy()
    return replace(trained, model=TinyTransformer(trained.model.config, parameters))


def test_figure_has_one_row_per_layer_and_titles_from_the_measured_roles():
    maps = trained_maps(SENTENCE)
    figures, warnings = make_trained_figures(maps, None, lang="en")
    axes = heatmap_axes(figures[0])
    assert len(axes) == 8 and warnings == ()
    texts = load_trained_texts()
    forward = shipped_model().model.forward(encode(SENTENCE)[None])
    for index, (axis, role) in enumerate(zip(axes, head_roles(shipped_model().model))):
        layer, head = divmod(index, 4)
        np.testing.assert_allclose(axis.images[0].get_array(), forward.weights[layer, 0, head])
        assert axis.get_title().splitlines()[:2] == [f"head {layer}.{head}", role_text(role, texts, "en")]
        assert [label.get_text() for label in axis.get_xticklabels()] == ["<s>", *SENTENCE.split()]
    assert axes[0].get_ylabel() == "layer 0" and axes[4].get_ylabel() == "layer 1"
    assert figures[1].axes[0].images[0].get_array().shape == (8, 8)


def test_roles_follow_the_weights_not_the_head_numbers():
    trained = shipped_model()
    before = [role.role for role in head_roles(trained.model)]
    assert before[0] == "previous" and before[2] != "previous"
    swapped = [role.role for role in head_roles(swapped_heads(trained, 0, 0, 2).model)]
    assert swapped[2] == "previous" and swapped[0] == before[2]
    maps = trained_maps(SENTENCE, model=swapped_heads(trained, 0, 0, 2).model)
    assert maps.role(0, 2).role == "previous" and maps.here_score(0, 2) > 0.9


def test_cli_exports_tokens_and_one_weights_array_per_layer(tmp_path):
    export = tmp_path / "maps.json"
    result = CliRunner().invoke(root, ["viz", "--trained", "--sentence", "a b c d e f a b c d e f", "--lang", "en",
                                       "--out", str(tmp_path / "heads.png"), "--export", str(export)])
    assert result.exit_code == 0, result.output
    assert "layer 0 head 0: previous token" in result.output
    maps = json.loads(export.read_text(encoding="utf-8"))["maps"]
    assert maps["tokens"] == ["<s>", *"abcdefabcdef"]
    assert [entry["layer"] for entry in maps["layers"]] == [0, 1]
    forward = shipped_model().model.forward(encode("a b c d e f a b c d e f")[None])
    for layer, entry in enumerate(maps["layers"]):
        weights = np.array(entry["weights"])
        assert weights.shape == (4, 13, 13)
        np.testing.assert_allclose(weights, forward.weights[layer, 0])
        assert [head["role"] for head in entry["heads"]][0 if layer == 0 else 1] in ("previous", "induction")
    # on this sentence the induction head copies: after "a", it looks at the "b" that followed the first "a"
    induction = maps["layers"][1]["heads"][1]
    assert induction["role"] == "induction" and induction["here"]["induction"] > 0.8
    assert (tmp_path / "heads.png").is_file() and (tmp_path / "heads-similarity.png").is_file()
    npz = tmp_path / "maps.npz"
    result = CliRunner().invoke(root, ["viz", "--trained", "--out", str(tmp_path / "h.svg"), "--export", str(npz)])
    with np.load(npz, allow_pickle=False) as archive:
        assert archive["maps.layers.1.weights"].shape == (4, 15, 15)
        assert list(archive["maps.tokens"]) == ["<s>", *SENTENCE.split()]


def test_ablation_json_and_table_say_which_head_carries_the_task(tmp_path):
    result = CliRunner().invoke(root, ["viz", "--trained", "--ablate", "--json", "--out", str(tmp_path / "h.png")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    ablation = data["ablation"]
    heads = ablation["heads"]
    carrier = max(heads, key=lambda head: head["damage"])
    assert (carrier["layer"], carrier["head"], carrier["role"], carrier["verdict"]) == (0, 0, "previous", "carries")
    again = task_score(shipped_model().model, probe_batch(), ((0, 0),))
    assert carrier["zeroed"]["loss"] == pytest.approx(again.loss)
    assert carrier["damage"] == pytest.approx((again.loss - ablation["intact"]["loss"])
                                              / (CHANCE_LOSS - ablation["intact"]["loss"]))
    redundant = [head for head in heads if head["verdict"] == "redundant"]
    assert redundant and all(head["damage"] < 0.2 for head in redundant)
    similarity = np.array(ablation["similarity"])
    assert similarity.shape == (8, 8) and np.allclose(np.diag(similarity), 1.0)
    whole_layer = [entry for entry in ablation["together"] if len(entry["heads"]) == 4]
    assert [entry["heads"][0] for entry in whole_layer] == ["0.0", "1.0"]
    assert whole_layer[1]["damage"] > 0.9
    assert (tmp_path / "h-ablation.png").is_file()
    table = CliRunner().invoke(root, ["viz", "--trained", "--ablate", "--lang", "zh", "--out", str(tmp_path / "z.png")])
    assert table.exit_code == 0
    assert "承担了这项任务" in table.output and "局限" in table.output and "0.0" in table.output


@pytest.mark.parametrize("arguments, message", [
    (["--trained", "--sentence", "the cat"], "does not know 'the', 'cat'"),
    (["--trained", "--sentence", "a B"], "a b c d e f g h i j k l m n o p q r s t u v w x y z"),
    (["--trained", "--lang", "zh", "--sentence", "a B"], "训练好的模型不认识 'B'"),
    (["--ablate"], "add --trained"),
    (["--trained", "--heads", "2"], "leave out FILE, --heads"),
    (["--trained", "--sentence", " ".join("abcdefghijklmnopqrstu")], "22 tokens"),
])
def test_cli_refusals_name_the_fix(arguments, message):
    result = CliRunner().invoke(root, ["viz", *arguments])
    assert result.exit_code == 2
    assert message in result.stderr


def test_chinese_figure_titles_and_the_ablation_report_in_both_languages():
    from grader.viz.heatmaps import find_cjk_font

    maps = trained_maps(SENTENCE, lang="zh")
    report = ablation_report()
    figures, warnings = make_trained_figures(maps, report, lang="zh")
    if find_cjk_font() is None:
        assert warnings and heatmap_axes(figures[0])[0].get_title().startswith("head 0.0")
        return
    assert warnings == ()
    title = heatmap_axes(figures[0])[0].get_title()
    assert title.startswith("头 0.0") and "前一个词元" in title
    english = report.to_dict("en")["heads"][0]["says"]
    chinese = report.to_dict("zh")["heads"][0]["says"]
    assert "carries the task" in english and "承担" in chinese


def test_a_sentence_without_repeats_has_no_induction_measure_here():
    from grader.viz.trained_views import role_lines

    maps = trained_maps("a b c d")
    assert np.isnan(maps.here["induction"]).all() and np.isfinite(maps.here["previous"]).all()
    lines = role_lines(maps, "en")
    assert [line.endswith("(this sentence: -)") for line in lines] == [role.role == "induction" for role in maps.roles]
    assert np.isnan(trained_maps("a").here["previous"]).all()  # too short to tell previous from first


def test_empty_sentence_is_refused():
    with pytest.raises(UsageError, match="empty"):
        trained_maps("   ")


def test_viz_help_lists_the_trained_options():
    result = CliRunner().invoke(root, ["viz", "--help"])
    assert result.exit_code == 0 and "--trained" in result.output and "--ablate" in result.output


def test_explainer_gets_one_trained_entry_per_preset_and_layer(tmp_path):
    from grader.viz.explainer import explainer_data, write_explainer

    data = explainer_data(sentences=["the cat sat"], d_model=8, heads=2)
    trained = [entry for entry in data["sentences"] if entry.get("model") == "trained"]
    presets = load_trained_texts().presets
    assert [(entry["sentence"], entry["layer"]) for entry in trained] == [(s, layer) for s in presets for layer in (0, 1)]
    entry = trained[1]
    trace = entry["traces"]["4"]
    assert entry["head_options"] == [4] and trace["masked"] is True and entry["tokens"][0] == "<s>"
    length = len(entry["tokens"])
    scaled = trace["stages"]["scaled_scores"]
    assert all((value is None) == (key > query) for head in scaled for query, row in enumerate(head)
               for key, value in enumerate(row))
    forward = shipped_model().model.forward(encode(entry["sentence"])[None])
    np.testing.assert_allclose(trace["stages"]["weights"], forward.weights[1, 0].round(4))
    assert trace["shapes"]["inputs"] == [1, length, 32]
    assert [role["role"] for role in trace["roles"]] == [role.role for role in head_roles(shipped_model().model)[4:]]
    assert {"trained.page.intro", "trained.role.induction"} <= set(data["texts"])
    page = write_explainer(out=tmp_path / "page.html", sentences=["the cat sat"], d_model=8, heads=2)
    assert page.sentences[0] == "the cat sat" and not any("trained" in text for text in page.sentences)
