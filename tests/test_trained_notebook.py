"""The trained-heads notebooks: generated from their content files, and they run on a real Jupyter kernel."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import PROJECT
from grader.authoring.trained_notebook import build_notebook, load_content, notebook_path, notebook_text
from grader.errors import ConfigError, ContentError

LANGS = ("en", "zh")


@pytest.mark.parametrize("lang", LANGS)
def test_notebook_files_are_exactly_what_the_generator_writes(lang):
    on_disk = notebook_path(lang).read_text(encoding="utf-8")
    assert on_disk == notebook_text(build_notebook(lang)), \
        f"{notebook_path(lang)} drifted from its source; run `python -m grader.authoring.trained_notebook`"


def test_both_languages_have_the_same_cells_and_chinese_prose_is_unwrapped():
    english, chinese = (json.loads(notebook_path(lang).read_text(encoding="utf-8")) for lang in LANGS)
    assert [cell["id"] for cell in english["cells"]] == [cell["id"] for cell in chinese["cells"]]
    markdown = "".join("".join(cell["source"]) for cell in chinese["cells"] if cell["cell_type"] == "markdown")
    assert "归纳头" in markdown and "注意力图不是解释" in markdown
    assert not re.search(r"[\u4e00-\u9fff，。；：]\n[\u4e00-\u9fff]", markdown)
    code = {cell["id"]: "".join(cell["source"]) for cell in chinese["cells"] if cell["cell_type"] == "code"}
    assert 'lang="zh"' in code["demo-ablate"] and 'lang="zh"' in code["demo-look"]
    english_markdown = "".join("".join(cell["source"]) for cell in english["cells"] if cell["cell_type"] == "markdown")
    assert "Olsson et al." in english_markdown and "Attention is not Explanation" in english_markdown


def test_content_errors_name_the_file_and_key(tmp_path):
    folder = tmp_path / "trained_heads"
    shutil.copytree(PROJECT / "grader" / "content" / "trained_heads", folder)
    text = (folder / "zh.toml").read_text(encoding="utf-8")
    (folder / "zh.toml").write_text(text.replace("together = '''", "together_again = '''", 1), encoding="utf-8")
    load_content.cache_clear()
    try:
        with pytest.raises(ContentError, match=r"zh\.toml: missing key 'text\.together'"):
            load_content(folder)
    finally:
        load_content.cache_clear()


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    from nbclient import NotebookClient

    folder = tmp_path_factory.mktemp("kernel")
    runs = {}
    for lang in LANGS:
        notebook = build_notebook(lang)
        NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=False,
                       resources={"metadata": {"path": str(folder)}}).execute()
        runs[lang] = {cell.id: cell for cell in notebook.cells if cell.cell_type == "code"}
    return runs


def printed(cell) -> str:
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def shown(cell, kind: str) -> list:
    return [output.data[kind] for output in cell.outputs if kind in output.get("data", {})]


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_the_notebook_trains_a_model_whose_heads_form_and_ablates_them(executed, lang):
    cells = executed[lang]
    assert "<s>" in printed(cells["demo-task"])
    trained = printed(cells["demo-train"])
    assert ("800 steps" if lang == "en" else "800 步") in trained
    assert len(shown(cells["demo-train"], "image/png")) == 1
    # both heads formed within the run: each score reached 0.5 at some logged step
    when = printed(cells["demo-when"])
    assert "None" not in when and len(re.findall(r"\b\d+\b", when)) >= 6, when
    assert len(shown(cells["demo-look"], "image/png")) == 1
    html = shown(cells["demo-ablate"], "text/html")
    assert len(html) == 1 and len(shown(cells["demo-ablate"], "image/png")) == 1
    assert ("carries the task" if lang == "en" else "承担") in html[0]
    together = printed(cells["demo-together"])
    assert together.count("%") == 3
    assert len(shown(cells["demo-shipped"], "image/png")) == 2


def test_notebook_prose_follows_the_glossary_and_the_chinese_typography():
    from test_glossary import GLOSSARY, TYPOGRAPHY, prose, word_uses

    english, chinese = (load_content().texts[lang] for lang in LANGS)
    pairs = [(f"text.{key}", english["text"][key], chinese["text"][key]) for key in english["text"]
             if english["text"][key] != chinese["text"][key]]  # the same in both (the references): not prose
    pairs.append(("title", english["title"], chinese["title"]))
    problems = []
    for term in GLOSSARY["term"]:
        if "only_in" in term:
            continue  # terms of other files' meanings (points of a grade)
        pattern = re.compile(term["en"], re.IGNORECASE)
        for where, en, zh in pairs:
            if word_uses(pattern, prose(en)) and not any(word in prose(zh) for word in term["zh"]):
                problems.append(f"{where}: {term['concept']!r} has none of {term['zh']}")
            problems += [f"{where}: {variant!r}" for variant in term.get("avoid", [])
                         if word_uses(re.compile(variant), prose(zh))]
    for rule, pattern in TYPOGRAPHY.items():
        problems += [f"{where}: {rule}: {match.group(0)!r}" for where, _, zh in pairs
                     for match in pattern.finditer(prose(zh))]
    assert problems == []


# ---- the recorded run a student release replays -------------------------------------------------
@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    from grader.tinymodel.recording import record_run
    from grader.tinymodel.train import TrainingSettings

    settings = TrainingSettings(steps=60, learning_rate=1e-2, log_every=20, seed=0)
    return settings, record_run(path=tmp_path_factory.mktemp("recording") / "run.npz", settings=settings)


def test_a_replayed_run_shows_what_training_showed(recorded, monkeypatch):
    """Where attention_backward is not at hand the recording is replayed: the same losses, and the heads
    measured on each step's weights give the scores the live run gave."""
    from grader.tinymodel import recording
    from grader.tinymodel.train import train
    from grader.viz.training_curves import HeadWatch

    settings, path = recorded
    live = HeadWatch()
    trained = train(settings, on_log=live)
    monkeypatch.setattr(recording, "solution_path", lambda name: None)  # as in a release: no reference
    assert not recording.can_train()
    watched = HeadWatch()
    replayed = recording.train_or_replay(settings, on_log=watched, recording=path)
    assert replayed.replayed and not trained.replayed
    assert replayed.steps == trained.steps == [20, 40, 60] and watched.steps == live.steps
    assert replayed.task_losses == pytest.approx(trained.task_losses)
    for role, layer in (("previous", 0), ("induction", 1)):
        assert watched.best(role, layer) == pytest.approx(live.best(role, layer), abs=1e-5)
    for name, value in trained.model.parameters.items():
        assert replayed.model.parameters[name] == pytest.approx(value, abs=1e-6), name


def test_replaying_other_settings_or_no_recording_says_what_to_do(recorded, monkeypatch, tmp_path):
    from dataclasses import replace

    from grader.tinymodel import recording

    settings, path = recorded
    monkeypatch.setattr(recording, "solution_path", lambda name: None)
    with pytest.raises(ConfigError, match=r"steps.: 61.*backward_module"):
        recording.train_or_replay(replace(settings, steps=61), recording=path)
    with pytest.raises(ConfigError, match=r"no recorded run ships at .*nothing\.npz"):
        recording.train_or_replay(settings, recording=tmp_path / "nothing.npz")
    (tmp_path / "bad.npz").write_bytes(b"not an archive")
    with pytest.raises(ConfigError, match=r"bad\.npz: not a recorded training run"):
        recording.load_recording(tmp_path / "bad.npz")


def test_a_build_records_the_run_once_and_copies_it_after(monkeypatch, tmp_path):
    from grader.tinymodel import recording

    made = []

    def record(*, path, **_):
        made.append(path)
        path.write_bytes(b"run %d" % len(made))
        return path

    monkeypatch.setattr(recording, "record_run", record)
    monkeypatch.setenv(recording.CACHE_VARIABLE, str(tmp_path / "cache"))
    for release in ("one", "two"):
        written = recording.write_recording(tmp_path / release / "recorded_run.npz")
        assert written.read_bytes() == b"run 1"
    assert len(made) == 1 and list((tmp_path / "cache").glob("recorded-run-*.npz"))
    (tmp_path / "blocked").write_text("a file where the cache folder would be")
    monkeypatch.setenv(recording.CACHE_VARIABLE, str(tmp_path / "blocked"))
    written = recording.write_recording(tmp_path / "three" / "recorded_run.npz")
    assert written == tmp_path / "three" / "recorded_run.npz" and written.read_bytes() == b"run 2"
