"""Training the tiny model: its backward pass, Adam, and the seeded training loop.

``python -m grader.tinymodel.train`` trains the shipped model from scratch
(seeded: the same settings give the same weights) and writes it to
``grader/tinymodel/trained.npz``, printing the loss curve and the role of
every head as it goes.

The gradient of attention itself comes from the backward-pass exercise's
``attention_backward(dout, Q, K, V, weights)``: the reference in
``solutions/attention_backward.py`` by default, or a student's own module
that passes its checks. Masked keys have weight exactly 0, and the softmax
Jacobian ``w * (dw - sum(dw * w))`` is 0 wherever ``w`` is, so the unmasked
backward is also the causal one. What is written here is the rest of the
chain: the logits, the residual stream, the projections and the embeddings.

Shape legend: ``B`` batch, ``L`` layers, ``H`` heads, ``T`` tokens, ``D``
width, ``d_k = D // H``, ``V`` vocabulary size.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from grader.errors import ConfigError
from grader.paths import solution_path
from grader.tinymodel.model import (ForwardPass, ModelConfig, TinyTransformer, combine_heads, init_parameters,
                                    next_token_loss, split_heads)
from grader.tinymodel.tasks import repeated_runs


@dataclass(frozen=True)
class TrainingSettings:
    """How a run trains; the defaults are the ones the shipped weights were trained with."""

    steps: int = 6000
    batch_size: int = 32
    length: int = 32  # tokens per training sequence, the start marker included
    learning_rate: float = 5e-3
    warmup_steps: int = 100
    seed: int = 0
    log_every: int = 50

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainingRun:
    """A run: the model, its loss curve and how long it took."""

    model: TinyTransformer
    settings: TrainingSettings
    steps: list[int] = field(default_factory=list)  # the steps at which the losses were logged
    losses: list[float] = field(default_factory=list)  # mean loss over every prediction since the last log
    task_losses: list[float] = field(default_factory=list)  # the same over the determined predictions only
    seconds: float = 0.0
    replayed: bool = False  # a recorded run played back (grader.tinymodel.recording), not trained here


# The exercise whose ``attention_backward`` training uses (its reference by default).
BACKWARD_EXERCISE = "attention_backward"
# (step, loss, task loss, model): called at every log, e.g. to measure the heads as they form.
LogCallback = Callable[[int, float, float, TinyTransformer], None]


def load_backward(source: str | Path | ModuleType | None = None) -> ModuleType:
    """The module whose ``attention_backward`` training uses: a module, a file, or (None) the reference."""
    if isinstance(source, ModuleType):
        module = source
    else:
        path = solution_path(BACKWARD_EXERCISE) if source is None else Path(source)
        if path is None:
            raise ConfigError(
                "training needs attention_backward from the backward-pass exercise, and its reference "
                f"(solutions/{BACKWARD_EXERCISE}.py) is not installed here: pass your own, e.g. "
                f'train(backward_module="exercises/{BACKWARD_EXERCISE}.py"), once its checks pass')
        if not path.is_file():
            raise ConfigError(f"{path} is not a file; pass a module that defines attention_backward")
        spec = importlib.util.spec_from_file_location(f"mha_backward_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    if not callable(getattr(module, "attention_backward", None)):
        where = getattr(module, "__file__", None) or module.__name__
        raise ConfigError(f"{where} defines no attention_backward(dout, Q, K, V, weights)")
    return module


def backward(model: TinyTransformer, forward: ForwardPass, dlogits: np.ndarray,
             attention_backward) -> dict[str, np.ndarray]:
    """Gradients of every parameter, given ``dlogits`` ``(B, T, V)`` of ``forward``."""
    config = model.config
    width = config.d_model
    parameters = model.parameters
    gradients = {"unembedding": forward.final.reshape(-1, width).T @ dlogits.reshape(-1, config.vocab_size)}
    dstream = dlogits @ parameters["unembedding"].T  # (B, T, D)
    for layer in reversed(range(config.num_layers)):
        stages = forward.layers[layer].stages
        weights = model.layer_weights(layer)
        prefix = f"layer{layer}."
        # The residual connection passes dstream through unchanged; the layer adds its own share.
        gradients[prefix + "W_O"] = stages["concatenated"].reshape(-1, width).T @ dstream.reshape(-1, width)
        dheads = split_heads(dstream @ weights["W_O"].T, config.num_heads)  # (B, H, T, d_k)
        dheads = dheads * forward.head_mask[layer][None, :, None, None]  # an ablated head passes nothing back
        dqueries, dkeys, dvalues = attention_backward(
            dheads, stages["queries_split"], stages["keys_split"], stages["values_split"], stages["weights"])
        dinputs = np.zeros_like(dstream)
        for name, dsplit in (("W_Q", dqueries), ("W_K", dkeys), ("W_V", dvalues)):
            dprojected = combine_heads(dsplit)  # (B, T, D)
            gradients[prefix + name] = stages["inputs"].reshape(-1, width).T @ dprojected.reshape(-1, width)
            dinputs += dprojected @ weights[name].T  # (B, T, D)
        dstream = dstream + dinputs  # (B, T, D)
    length = forward.ids.shape[1]
    gradients["embedding"] = np.zeros_like(parameters["embedding"])
    np.add.at(gradients["embedding"], forward.ids.reshape(-1), dstream.reshape(-1, width))  # (V, D)
    gradients["positions"] = np.zeros_like(parameters["positions"])
    gradients["positions"][:length] = dstream.sum(axis=0)  # (T, D)
    return gradients


def learning_rate_at(step: int, settings: TrainingSettings) -> float:
    """A linear warm-up to ``learning_rate``, then a cosine decay to a tenth of it at the last step."""
    if step <= settings.warmup_steps:
        return settings.learning_rate * step / max(settings.warmup_steps, 1)
    progress = (step - settings.warmup_steps) / max(settings.steps - settings.warmup_steps, 1)
    return settings.learning_rate * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * min(progress, 1.0))))


class Adam:
    """Adam (Kingma and Ba, 2015); the caller gives each step's learning rate."""

    def __init__(self, parameters: dict[str, np.ndarray], *,
                 betas: tuple[float, float] = (0.9, 0.98), epsilon: float = 1e-8):
        self.betas, self.epsilon = betas, epsilon
        self.first = {name: np.zeros_like(value) for name, value in parameters.items()}
        self.second = {name: np.zeros_like(value) for name, value in parameters.items()}
        self.step_count = 0

    def step(self, parameters: dict[str, np.ndarray], gradients: dict[str, np.ndarray], rate: float) -> None:
        """Move ``parameters`` in place, ``rate`` times the bias-corrected step."""
        self.step_count += 1
        beta1, beta2 = self.betas
        for name, gradient in gradients.items():
            self.first[name] = beta1 * self.first[name] + (1 - beta1) * gradient
            self.second[name] = beta2 * self.second[name] + (1 - beta2) * gradient ** 2
            corrected_first = self.first[name] / (1 - beta1 ** self.step_count)
            corrected_second = self.second[name] / (1 - beta2 ** self.step_count)
            parameters[name] -= rate * corrected_first / (np.sqrt(corrected_second) + self.epsilon)


def train(settings: TrainingSettings = TrainingSettings(), *, config: ModelConfig = ModelConfig(),
          backward_module: str | Path | ModuleType | None = None, on_log: LogCallback | None = None
          ) -> TrainingRun:
    """Train a fresh model on repeated runs (``grader.tinymodel.tasks``) and return the run."""
    if settings.length > config.max_length:
        raise ValueError(f"training sequences of {settings.length} tokens need max_length >= {settings.length}")
    attention_backward = load_backward(backward_module).attention_backward
    model = TinyTransformer(config, init_parameters(config, seed=settings.seed))
    optimizer = Adam(model.parameters)
    data = np.random.default_rng([settings.seed, 1])  # its own stream: the init does not shift the data
    run = TrainingRun(model=model, settings=settings)
    started = time.perf_counter()
    window, task_window = [], []
    for step in range(1, settings.steps + 1):
        batch = repeated_runs(data, batch=settings.batch_size, length=settings.length)
        forward = model.forward(batch.ids)
        loss, dlogits = next_token_loss(forward.logits, batch.ids)
        optimizer.step(model.parameters, backward(model, forward, dlogits, attention_backward),
                       learning_rate_at(step, settings))
        window.append(loss)
        task_window.append(next_token_loss(forward.logits, batch.ids, batch.repeated)[0])
        if step % settings.log_every == 0 or step == settings.steps:
            run.steps.append(step)
            run.losses.append(float(np.mean(window)))
            run.task_losses.append(float(np.mean(task_window)))
            window, task_window = [], []
            if on_log is not None:
                on_log(step, run.losses[-1], run.task_losses[-1], model)
    run.seconds = time.perf_counter() - started
    return run


def main(argv: list[str] | None = None) -> None:
    """Train the shipped model and write it (``python -m grader.tinymodel.train``)."""
    import argparse

    from grader.tinymodel.roles import head_roles, probe_batch
    from grader.tinymodel.store import WEIGHTS_FILE, save_run

    defaults = TrainingSettings()
    parser = argparse.ArgumentParser(prog="python -m grader.tinymodel.train", description=main.__doc__)
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--out", type=Path, default=WEIGHTS_FILE, help="where to write the weights (.npz)")
    arguments = parser.parse_args(argv)
    settings = TrainingSettings(steps=arguments.steps, seed=arguments.seed)
    print(f"training {ModelConfig()} with {settings}")
    started = time.perf_counter()

    def report(step: int, loss: float, task_loss: float, model: TinyTransformer) -> None:
        if step % 500 == 0 or step == settings.steps:
            print(f"step {step:5d}  loss {loss:.3f}  loss on the repeats {task_loss:.3f}  "
                  f"{time.perf_counter() - started:5.0f} s", flush=True)

    run = train(settings, on_log=report)
    path = save_run(run, arguments.out)
    print(f"{run.seconds:.0f} s of training; wrote {path} ({path.stat().st_size / 1024:.1f} KiB)")
    for role in head_roles(run.model, probe_batch()):
        print(f"layer {role.layer} head {role.head}: {role.role} {role.score:.2f}")


if __name__ == "__main__":
    main()
