"""The tiny trained transformer: vocabulary, forward and backward, training, the shipped weights, roles."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import PROJECT
from grader.errors import ConfigError, UsageError
from grader.grading.reference import load_reference
from grader.tinymodel.model import ModelConfig, TinyTransformer, init_parameters, next_token_loss
from grader.tinymodel.roles import (CHANCE_LOSS, ROLE_THRESHOLD, ablate_heads, assign_roles, head_roles, pattern_scores,
                                    probe_batch, task_score)
from grader.tinymodel.store import WEIGHTS_FILE, load_trained, save_run
from grader.tinymodel.tasks import repeated_runs
from grader.tinymodel.train import TrainingRun, TrainingSettings, backward, load_backward, train
from grader.tinymodel.vocabulary import LETTERS, START, UnknownTokens, decode, encode, tokens_of

TINY = ModelConfig(num_layers=2, num_heads=2, d_model=8, max_length=10)
MAX_WEIGHTS_BYTES = 2 * 1024 * 1024


def rel_error(x, y):
    """Largest relative error, as in CS231n's gradient checks."""
    return float(np.max(np.abs(x - y) / np.maximum(1e-8, np.abs(x) + np.abs(y))))


# ---- vocabulary -----------------------------------------------------------------------------
def test_letters_are_tokens_and_the_start_marker_comes_first():
    ids = encode("a b c d e f a b c d e f")
    assert ids.shape == (13,) and ids[0] == 0
    assert decode(ids) == (START, *"abcdefabcdef")
    assert len(set(LETTERS)) == 26 and tokens_of("z") == (START, "z")


@pytest.mark.parametrize("sentence, unknown", [("a B c", ("B",)), ("the cat", ("the", "cat")),
                                               ("<s> a", ("<s>",)), ("a 1 1", ("1",))])
def test_unknown_tokens_are_refused_with_the_vocabulary(sentence, unknown):
    with pytest.raises(UnknownTokens) as raised:
        encode(sentence)
    assert raised.value.unknown == unknown
    assert isinstance(raised.value, UsageError)
    assert "a b c d e f g h i j k l m n o p q r s t u v w x y z" in str(raised.value)


# ---- the training task ----------------------------------------------------------------------
def test_task_sequences_repeat_a_run_of_distinct_letters_after_a_random_part():
    batch = repeated_runs(np.random.default_rng(0), batch=64, length=24)
    assert batch.ids.shape == (64, 24) and (batch.ids[:, 0] == 0).all()
    for row, run, start in zip(batch.ids, batch.run_lengths, batch.run_starts):
        letters = row[start:start + run]
        assert len(set(letters)) == run and not set(letters) & set(row[1:start])
        assert (row[start + run:] == row[start:24 - run]).all()
    # determined: the current letter has occurred before; the first letter of the second run is not
    positions = np.arange(23)
    expected = positions[None] >= (batch.run_starts + batch.run_lengths)[:, None]
    assert (batch.repeated == expected).all()


# ---- forward and backward -------------------------------------------------------------------
def test_forward_is_causal_and_each_head_a_distribution():
    model = TinyTransformer(TINY, init_parameters(TINY, seed=3))
    ids = repeated_runs(np.random.default_rng(1), batch=2, length=9, longest=4).ids
    forward = model.forward(ids)
    weights = forward.weights  # (L, B, H, T, T)
    assert weights.shape == (2, 2, 2, 9, 9)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    assert (np.triu(np.ones((9, 9)), k=1)[None, None, None] * weights == 0).all()
    changed = ids.copy()
    changed[:, -1] = (changed[:, -1] % 26) + 1
    later = model.forward(changed)
    np.testing.assert_array_equal(later.logits[:, :-1], forward.logits[:, :-1])


def test_each_layer_is_the_exercise_multi_head_attention_where_the_mask_hides_nothing():
    reference = load_reference("multihead_attention")
    model = TinyTransformer(TINY, init_parameters(TINY, seed=4))
    ids = repeated_runs(np.random.default_rng(2), batch=3, length=8, longest=3).ids
    forward = model.forward(ids)
    for layer, result in enumerate(forward.layers):
        attention = reference.MultiHeadAttention(TINY.d_model, TINY.num_heads)
        for name, value in model.layer_weights(layer).items():
            setattr(attention, name, value)
        x = result.stages["inputs"]
        out, weights = attention.forward(x, x, x, return_weights=True)
        # the last query sees every key, so the causal mask changes nothing there
        np.testing.assert_allclose(result.stages["output"][:, -1], out[:, -1], atol=1e-12)
        np.testing.assert_allclose(result.weights[:, :, -1], weights[:, :, -1], atol=1e-12)


@pytest.mark.parametrize("head_mask", [None, np.array([[1.0, 0.0], [1.0, 1.0]])])
def test_backward_matches_numerical_gradients(head_mask):
    model = TinyTransformer(TINY, init_parameters(TINY, seed=5))
    batch = repeated_runs(np.random.default_rng(3), batch=3, length=9, shortest=3, longest=4)

    def loss_now():
        return next_token_loss(model.forward(batch.ids, head_mask=head_mask).logits, batch.ids, batch.repeated)[0]

    forward = model.forward(batch.ids, head_mask=head_mask)
    _, dlogits = next_token_loss(forward.logits, batch.ids, batch.repeated)
    gradients = backward(model, forward, dlogits, load_backward().attention_backward)
    step = 1e-5
    for name, parameter in model.parameters.items():
        numerical = np.zeros_like(parameter)
        for index in np.ndindex(parameter.shape):
            kept = parameter[index]
            parameter[index] = kept + step
            plus = loss_now()
            parameter[index] = kept - step
            minus = loss_now()
            parameter[index] = kept
            numerical[index] = (plus - minus) / (2 * step)
        assert rel_error(gradients[name], numerical) < 1e-5, name
    if head_mask is not None:  # an ablated head learns nothing
        assert not gradients["layer0.W_Q"][:, 4:].any()


def test_backward_can_come_from_a_file_and_a_file_without_it_is_refused(tmp_path):
    path = PROJECT / "solutions" / "attention_backward.py"
    assert load_backward(path).attention_backward.__module__.startswith("mha_backward_")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="defines no attention_backward"):
        load_backward(empty)
    with pytest.raises(ConfigError, match="not a file"):
        load_backward(tmp_path / "missing.py")


def test_without_the_reference_training_asks_for_a_student_backward(monkeypatch, tmp_path):
    monkeypatch.setenv("MHA_SOLUTIONS", str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match="exercises/attention_backward.py"):
        load_backward()


# ---- training ---------------------------------------------------------------------------------
def test_a_short_training_run_lowers_the_loss_and_repeats_exactly():
    settings = TrainingSettings(steps=120, batch_size=16, length=21, learning_rate=1e-2, warmup_steps=10,
                                log_every=20)
    config = ModelConfig(max_length=21)
    run = train(settings, config=config)
    assert run.steps == [20, 40, 60, 80, 100, 120]
    # 120 steps learn what the letters' statistics give (the heads form later, near step 500)
    assert run.losses[-1] < min(run.losses[0] - 0.05, np.log(27)), run.losses
    again = train(settings, config=config)
    for name, value in run.model.parameters.items():
        np.testing.assert_array_equal(value, again.model.parameters[name])
    other = train(TrainingSettings(steps=1, seed=1, batch_size=4, length=21), config=config)
    assert not np.array_equal(other.model.parameters["embedding"], run.model.parameters["embedding"])


def test_saved_runs_load_back_with_their_curves(tmp_path):
    config = ModelConfig(max_length=16)
    run = TrainingRun(model=TinyTransformer(config, init_parameters(config, seed=0)),
                      settings=TrainingSettings(steps=2), steps=[1, 2], losses=[3.0, 2.5], task_losses=[3.1, 2.0],
                      seconds=0.5)
    loaded = load_trained(save_run(run, tmp_path / "run.npz"))
    assert loaded.model.config == config and list(loaded.steps) == [1, 2]
    np.testing.assert_allclose(loaded.task_losses, [3.1, 2.0])
    np.testing.assert_allclose(loaded.model.parameters["unembedding"], run.model.parameters["unembedding"],
                               rtol=1e-6)


def test_malformed_weight_files_are_refused_with_what_to_run(tmp_path):
    with pytest.raises(ConfigError, match="python -m grader.tinymodel.train"):
        load_trained(tmp_path / "missing.npz")
    with np.load(WEIGHTS_FILE, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    short = dict(arrays)
    del short["parameter.layer1.W_O"]
    np.savez(tmp_path / "short.npz", **short)
    with pytest.raises(ConfigError, match="not a trained-model file"):
        load_trained(tmp_path / "short.npz")
    wrong = dict(arrays, **{"parameter.embedding": np.zeros((3, 3), dtype=np.float32)})
    np.savez(tmp_path / "wrong.npz", **wrong)
    with pytest.raises(ConfigError, match="embedding has shape"):
        load_trained(tmp_path / "wrong.npz")
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, metadata=np.array([{"config": 1}], dtype=object))
    with pytest.raises(ConfigError):
        load_trained(pickled)


# ---- the shipped weights ----------------------------------------------------------------------
def test_shipped_weights_are_small_plain_arrays_declared_as_package_data():
    assert WEIGHTS_FILE.stat().st_size <= MAX_WEIGHTS_BYTES
    with np.load(WEIGHTS_FILE, allow_pickle=False) as archive:
        assert all(archive[name].dtype != object for name in archive.files)
        metadata = json.loads(str(archive["metadata"]))
    assert metadata["settings"] == TrainingSettings().to_dict()
    pyproject = (PROJECT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"tinymodel/*.npz"' in pyproject


def test_shipped_model_has_a_previous_token_head_and_induction_heads_that_carry_the_task():
    trained = load_trained()
    roles = head_roles(trained.model)
    by_layer = [[role.role for role in roles if role.layer == layer] for layer in range(2)]
    assert "previous" in by_layer[0] and "induction" in by_layer[1], by_layer
    previous = max((role for role in roles if role.layer == 0), key=lambda role: role.scores["previous"])
    assert previous.scores["previous"] > 0.95
    assert max(role.scores["induction"] for role in roles if role.layer == 1) > 0.9
    ablation = ablate_heads(trained.model)
    assert ablation.intact.accuracy > 0.99
    # removing the previous-token head sends the task back to chance; most heads cost little
    assert ablation.damage[0, previous.head] > 0.9
    assert (ablation.damage < 0.2).sum() >= 5
    layer_two = task_score(trained.model, probe_batch(), tuple((1, head) for head in range(4)))
    assert layer_two.loss > CHANCE_LOSS - 0.2 and layer_two.accuracy < 0.1
    assert trained.task_losses[-1] < 0.2 < 2.0 < trained.task_losses[0]


# ---- roles from the weights -------------------------------------------------------------------
def test_pattern_scores_name_heads_that_follow_each_pattern_exactly():
    batch = repeated_runs(np.random.default_rng(7), batch=8, length=12, longest=5)
    length = 12
    previous = np.eye(length, k=-1)
    previous[0, 0] = 1.0
    first = np.zeros((length, length))
    first[:, 0] = 1.0
    uniform = np.tril(np.ones((length, length)))
    uniform /= uniform.sum(axis=-1, keepdims=True)
    # induction: attend to the token after the last earlier occurrence of the query's token, else <s>
    induction = np.zeros((8, length, length))
    for row, ids in enumerate(batch.ids):
        for query in range(length):
            earlier = [key for key in range(1, query + 1) if ids[key - 1] == ids[query]]
            induction[row, query, earlier[-1] if earlier else 0] = 1.0
    heads = [np.broadcast_to(pattern, (8, length, length)) for pattern in (previous, first, np.eye(length), uniform)]
    weights = np.stack(heads + [induction], axis=1)[None]  # (L=1, B, H=5, T, T)
    roles = assign_roles(pattern_scores(weights, batch.ids))
    assert [role.role for role in roles] == ["previous", "first", "self", "diffuse", "induction"]
    assert [round(role.score, 6) for role in roles[:3]] == [1.0, 1.0, 1.0]
    assert roles[3].score == pytest.approx(1.0) and roles[4].score == pytest.approx(1.0)
    assert roles[3].scores["first"] < ROLE_THRESHOLD


# ---- layering ---------------------------------------------------------------------------------
def test_tinymodel_imports_only_numpy_scipy_foundation_and_the_reference_loader():
    # the reference loader: the core exercise's blocks, which the model computes with (tinymodel/blocks.py);
    # in a release the student's own: which file is their work (entries), a notebook's cells (sandbox.source);
    # the cache folder of the recorded run (files)
    allowed = set(sys.stdlib_module_names) | {"numpy", "scipy", "grader.errors", "grader.paths", "grader.files",
                                              "grader.grading.reference", "grader.entries.entry",
                                              "grader.sandbox.source"}
    for path in (PROJECT / "grader" / "tinymodel").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            for name in names:
                top = name.split(".")[0]
                assert top in allowed or name in allowed or name.startswith("grader.tinymodel"), (path.name, name)


# ---- the full training script (slow) ----------------------------------------------------------
@pytest.mark.slow
def test_the_training_script_reproduces_heads_with_the_same_roles(tmp_path):
    out = tmp_path / "retrained.npz"
    done = subprocess.run([sys.executable, "-m", "grader.tinymodel.train", "--out", str(out)],
                          cwd=PROJECT, capture_output=True, text=True, timeout=15 * 60)
    assert done.returncode == 0, done.stderr
    assert "loss on the repeats" in done.stdout and "layer 1 head 3:" in done.stdout
    retrained, shipped = load_trained(out), load_trained()
    assert [role.role for role in head_roles(retrained.model)] == [role.role for role in head_roles(shipped.model)]
    np.testing.assert_allclose(retrained.task_losses, shipped.task_losses, atol=0.05)
