"""A training run recorded where it can be made, replayed where it cannot.

Training needs ``attention_backward``, the backward-pass exercise's answer,
which the core student release withholds. So the release is built with a
recording of the trained-heads notebook's run (``record_run``, made from the
reference inside the trusted build): the losses of every log and a snapshot
of the model's weights at each. ``train_or_replay`` trains where
``attention_backward`` is at hand (the reference, or the student's own module)
and otherwise replays that recording: each snapshot is handed to ``on_log``
as training would hand the live model, so whatever measures the heads
(``grader.viz.training_curves.HeadWatch``) runs the model's forward pass, with
the student's own attention in a release (``grader.tinymodel.blocks``).

The file is one ``.npz`` of plain arrays, read with ``allow_pickle=False``;
building it again with the same sources gives the same arrays, so a build
keeps it in the user cache under a digest of what made it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from grader.errors import ConfigError
from grader.paths import solution_path
from grader.tinymodel.model import ModelConfig, TinyTransformer, parameter_shapes
from grader.tinymodel.train import BACKWARD_EXERCISE, LogCallback, TrainingRun, TrainingSettings, train

RECORDING_FILE = Path(__file__).resolve().parent / "recorded_run.npz"  # written into a release by its build
SCHEMA_VERSION = 1
CACHE_VARIABLE = "MHA_RECORDING_CACHE"  # a folder kept across builds (a test session shares one)
# The run the trained-heads notebook trains (grader/content/trained_heads/*.toml, cell "train").
NOTEBOOK_SETTINGS = TrainingSettings(steps=800, learning_rate=1e-2, log_every=25, seed=0)


@dataclass(frozen=True)
class Recording:
    """A recorded run: its settings and sizes, the curve, and the weights at every logged step."""

    settings: TrainingSettings
    config: ModelConfig
    steps: tuple[int, ...]
    losses: tuple[float, ...]
    task_losses: tuple[float, ...]
    snapshots: tuple[dict[str, np.ndarray], ...]  # one parameter dict per logged step
    seconds: float


def record_run(*, path: Path, settings: TrainingSettings = NOTEBOOK_SETTINGS,
               config: ModelConfig = ModelConfig()) -> Path:
    """Train ``settings`` with the reference's ``attention_backward`` and write the recording to ``path``."""
    snapshots = []

    def keep(step: int, loss: float, task_loss: float, model: TinyTransformer) -> None:
        snapshots.append({name: value.astype(np.float32) for name, value in model.parameters.items()})

    run = train(settings, config=config, on_log=keep)
    metadata = {"schema_version": SCHEMA_VERSION, "settings": settings.to_dict(), "config": config.to_dict(),
                "seconds": round(run.seconds, 1)}
    arrays = {f"snapshot{index}.{name}": value for index, snapshot in enumerate(snapshots)
              for name, value in snapshot.items()}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, metadata=np.array(json.dumps(metadata)), steps=np.array(run.steps, dtype=np.int64),
                        losses=np.array(run.losses), task_losses=np.array(run.task_losses), **arrays)
    return path


def write_recording(path: Path) -> Path:
    """``record_run`` to ``path``, from the cache (``$MHA_RECORDING_CACHE``, else the user cache) when the
    same sources recorded it before."""
    import os

    from grader.files import user_cache_dir

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(os.environ.get(CACHE_VARIABLE) or user_cache_dir())
    cached = folder / f"recorded-run-{_sources_digest()}.npz"
    if not cached.is_file():
        temporary = cached.with_name(f"{cached.stem}.{os.getpid()}.partial.npz")  # builds in parallel: one each
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            record_run(path=temporary)
            temporary.replace(cached)
        except OSError:  # a cache folder that cannot be written: record straight into the release
            return record_run(path=path)
    shutil.copyfile(cached, path)
    return path


def _sources_digest() -> str:
    """What the recording depends on: the tiny model's code, the core and backward references, the settings."""
    digest = hashlib.sha256(json.dumps(NOTEBOOK_SETTINGS.to_dict(), sort_keys=True).encode())
    sources = sorted(Path(__file__).resolve().parent.glob("*.py"))
    sources += [path for path in (solution_path(BACKWARD_EXERCISE), solution_path()) if path]
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    digest.update(np.__version__.encode())
    return digest.hexdigest()[:20]


def load_recording(path: Path = RECORDING_FILE) -> Recording:
    """Read a recording; ConfigError naming the file when it is missing or malformed."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"training needs attention_backward from the backward-pass exercise, whose reference "
                          f"is not installed here, and no recorded run ships at {path}: pass your own, e.g. "
                          f'train_or_replay(settings, backward_module="exercises/{BACKWARD_EXERCISE}.py")')
    try:
        with np.load(path, allow_pickle=False) as archive:
            metadata = json.loads(str(archive["metadata"]))
            if metadata.get("schema_version") != SCHEMA_VERSION:
                raise ValueError(f"schema_version {metadata.get('schema_version')!r}, expected {SCHEMA_VERSION}")
            config = ModelConfig.from_dict(metadata["config"])
            steps = tuple(int(step) for step in archive["steps"])
            shapes = parameter_shapes(config)
            snapshots = tuple({name: archive[f"snapshot{index}.{name}"].astype(np.float64) for name in shapes}
                              for index in range(len(steps)))
            return Recording(settings=TrainingSettings(**metadata["settings"]), config=config, steps=steps,
                             losses=tuple(float(value) for value in archive["losses"]),
                             task_losses=tuple(float(value) for value in archive["task_losses"]),
                             snapshots=snapshots, seconds=float(metadata["seconds"]))
    except (KeyError, TypeError, ValueError, OSError) as error:
        raise ConfigError(f"{path}: not a recorded training run ({error}); the release build writes it") from None


def replay(recording: Recording, *, on_log: LogCallback | None = None) -> TrainingRun:
    """The recorded run, step by logged step: ``on_log`` gets each snapshot as the model of that step."""
    run = TrainingRun(model=TinyTransformer(recording.config, dict(recording.snapshots[-1])),
                      settings=recording.settings, seconds=recording.seconds, replayed=True)
    for step, loss, task_loss, snapshot in zip(recording.steps, recording.losses, recording.task_losses,
                                               recording.snapshots):
        run.steps.append(step)
        run.losses.append(loss)
        run.task_losses.append(task_loss)
        if on_log is not None:
            model = run.model if snapshot is recording.snapshots[-1] else TinyTransformer(recording.config,
                                                                                          dict(snapshot))
            on_log(step, loss, task_loss, model)
    return run


def can_train(backward_module=None) -> bool:
    """True where training finds an ``attention_backward``: one given, or the reference installed."""
    return backward_module is not None or solution_path(BACKWARD_EXERCISE) is not None


def train_or_replay(settings: TrainingSettings = NOTEBOOK_SETTINGS, *, backward_module=None,
                    on_log: LogCallback | None = None, recording: Path = RECORDING_FILE) -> TrainingRun:
    """Train ``settings`` where ``attention_backward`` is at hand, else replay the recording of the same run."""
    if can_train(backward_module):
        return train(settings, backward_module=backward_module, on_log=on_log)
    recorded = load_recording(recording)
    if recorded.settings != settings:
        wanted = {key: value for key, value in asdict(settings).items() if asdict(recorded.settings)[key] != value}
        raise ConfigError(f"the recorded run was trained with {recorded.settings}, and {wanted} differs: training "
                          "those settings needs attention_backward; pass your own with backward_module=..., "
                          f"e.g. backward_module=\"exercises/{BACKWARD_EXERCISE}.py\", once its checks pass")
    return replay(recorded, on_log=on_log)

