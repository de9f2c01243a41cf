"""The trained weights on disk: one ``.npz`` of plain arrays, read with ``allow_pickle=False``.

The file holds every parameter (``parameter.<name>``, float32: the model is
run in float64, and float32 keeps the file small), the model's sizes and
the training settings as JSON text, and the loss curve. A file whose
arrays do not match the sizes it declares is refused with a message that
says how to make a new one.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader.errors import ConfigError
from grader.tinymodel.model import ModelConfig, TinyTransformer, parameter_shapes
from grader.tinymodel.vocabulary import TOKENS

WEIGHTS_FILE = Path(__file__).resolve().parent / "trained.npz"
SCHEMA_VERSION = 1
REGENERATE = "python -m grader.tinymodel.train"


@dataclass(frozen=True)
class TrainedModel:
    """A model read from disk, with the record of how it was trained."""

    model: TinyTransformer
    settings: dict  # TrainingSettings.to_dict() of the run
    steps: np.ndarray  # (N,) logged steps
    losses: np.ndarray  # (N,) training loss over every prediction
    task_losses: np.ndarray  # (N,) training loss over the determined predictions
    seconds: float
    path: Path


def save_run(run, path: Path = WEIGHTS_FILE) -> Path:
    """Write a ``TrainingRun`` (see ``grader.tinymodel.train``) to ``path``."""
    path = Path(path)
    model = run.model
    metadata = {"schema_version": SCHEMA_VERSION, "config": model.config.to_dict(), "vocabulary": list(TOKENS),
                "settings": run.settings.to_dict(), "seconds": round(run.seconds, 1),
                "numpy": np.__version__}
    arrays = {f"parameter.{name}": value.astype(np.float32) for name, value in model.parameters.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, metadata=np.array(json.dumps(metadata)), steps=np.array(run.steps, dtype=np.int64),
                        losses=np.array(run.losses, dtype=np.float32),
                        task_losses=np.array(run.task_losses, dtype=np.float32), **arrays)
    return path


def load_trained(path: Path = WEIGHTS_FILE) -> TrainedModel:
    """Read the weights in ``path`` (default: the shipped ones); ConfigError if missing or malformed."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no trained weights at {path}; make them with `{REGENERATE}`")
    try:
        with np.load(path, allow_pickle=False) as archive:
            metadata = json.loads(str(archive["metadata"]))
            if metadata.get("schema_version") != SCHEMA_VERSION:
                raise ConfigError(f"{path}: schema_version {metadata.get('schema_version')!r}; "
                                  f"expected {SCHEMA_VERSION}")
            if metadata.get("vocabulary") != list(TOKENS):
                raise ConfigError(f"{path}: trained on another vocabulary; retrain with `{REGENERATE}`")
            config = ModelConfig.from_dict(metadata["config"])
            parameters = {name: archive[f"parameter.{name}"] for name in parameter_shapes(config)}
            curves = {name: archive[name] for name in ("steps", "losses", "task_losses")}
            settings, seconds = dict(metadata["settings"]), float(metadata["seconds"])
    except (KeyError, TypeError, ValueError, OSError) as error:
        raise ConfigError(f"{path}: not a trained-model file ({error}); make one with `{REGENERATE}`") from error
    try:
        model = TinyTransformer(config, parameters)
    except ValueError as error:
        raise ConfigError(f"{path}: {error}; retrain with `{REGENERATE}`") from error
    return TrainedModel(model=model, settings=settings, seconds=seconds, path=path, **curves)


@functools.cache
def shipped_model() -> TrainedModel:
    """The weights that ship with the package, read once."""
    return load_trained(WEIGHTS_FILE)
