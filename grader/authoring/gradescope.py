"""``mha release --gradescope``: a ready Gradescope autograder, ``autograder.zip``.

Gradescope unpacks the zip into ``/autograder/source``, runs ``setup.sh`` once
to build its image, and ``run_autograder`` for every submission. The zip holds
what the grader needs that PyPI does not have:

    setup.sh, run_autograder          from grader/authoring/templates/gradescope/
    wheels/mha_lab-<version>-py3-none-any.whl
                                      the grader with this assignment's public and hidden checks
    solutions/<assignment>.py         the reference, for the hidden cases
    assignment_key                    HMAC(course key, assignment): never the course key itself
    autograder.json                   assignment, language, visibility of hidden checks, output format
    README.md                         what is inside, for the instructor

The dependencies (NumPy and the rest of ``pyproject.toml``) come from PyPI
when Gradescope builds the image. ``grader.authoring.autograder`` is what
runs there.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from grader.authoring.wheel import FIXED_TIME, build_wheel
from grader.errors import ConfigError, UsageError
from grader.paths import DEFAULT_ASSIGNMENT, PACKAGE_DIR, solution_path
from grader.render.gradescope import HIDDEN_VISIBILITIES, OUTPUT_FORMATS

TEMPLATES = PACKAGE_DIR / "authoring" / "templates" / "gradescope"
SCRIPTS = ("setup.sh", "run_autograder")
ZIP_NAME = "autograder.zip"


@dataclass(frozen=True)
class GradescopeBundle:
    archive: Path
    files: tuple[str, ...]  # entries of the zip
    assignment: str
    key_fingerprint: str  # the first hex digits of the key's SHA-256: tells bundles apart, reveals nothing

    def to_dict(self) -> dict:
        return {"archive": str(self.archive), "files": list(self.files), "assignment": self.assignment,
                "key_fingerprint": self.key_fingerprint}


def fingerprint(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def keep_in_wheel(relative: str, assignment: str) -> bool:
    """Everything of the grader package but other assignments' hidden checks."""
    parts = relative.split("/")
    return not (parts[0] == "assignments" and len(parts) > 2 and parts[1] != assignment and parts[2] == "hidden")


def build_gradescope_bundle(*, target: Path, assignment: str = DEFAULT_ASSIGNMENT, lang: str = "en",
                            hidden_visibility: str = "after_published", output_format: str = "md",
                            force: bool = False) -> GradescopeBundle:
    """Write ``target/autograder.zip`` for ``assignment``; the key is derived from this machine's course key."""
    import tempfile

    from grader.grading.assignment import get_assignment
    from grader.seeding import assignment_key

    exercise = get_assignment(assignment)
    if hidden_visibility not in HIDDEN_VISIBILITIES:
        raise UsageError(f"hidden checks' visibility must be one of {', '.join(HIDDEN_VISIBILITIES)}")
    if output_format not in OUTPUT_FORMATS:
        raise UsageError(f"the output format must be one of {', '.join(OUTPUT_FORMATS)}")
    reference = solution_path(assignment)
    if reference is None or not (exercise.folder / "hidden").is_dir():
        raise ConfigError(f"the solutions and hidden checks of {assignment} are not installed here; "
                          "a Gradescope autograder is made from the instructor's copy")
    target = Path(target)
    archive = target / ZIP_NAME
    if archive.exists() and not force:
        raise UsageError(f"{archive} already exists; add --force to write it again")
    key = assignment_key(assignment)
    config = {"schema_version": 1, "assignment": assignment, "lang": lang, "hidden_visibility": hidden_visibility,
              "output_format": output_format, "key_fingerprint": fingerprint(key)}
    with tempfile.TemporaryDirectory() as scratch:
        wheel = build_wheel(folder=Path(scratch), keep=lambda relative: keep_in_wheel(relative, assignment))
        entries: dict[str, tuple[bytes, int]] = {}
        for script in SCRIPTS:
            text = (TEMPLATES / script).read_text(encoding="utf-8")
            text = text.replace("@WHEEL@", wheel.name).replace("@ASSIGNMENT@", assignment)
            entries[script] = (text.encode(), 0o755)
        entries[f"wheels/{wheel.name}"] = (wheel.read_bytes(), 0o644)
    entries[f"solutions/{assignment}.py"] = (reference.read_bytes(), 0o600)
    entries["assignment_key"] = (key.encode() + b"\n", 0o600)
    entries["autograder.json"] = (json.dumps(config, indent=1).encode() + b"\n", 0o644)
    entries["README.md"] = (_readme(assignment, config).encode(), 0o644)
    target.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, (data, mode) in entries.items():
            entry = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            entry.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
            entry.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(entry, data)
    archive.write_bytes(buffer.getvalue())
    return GradescopeBundle(archive=archive, files=tuple(entries), assignment=assignment,
                            key_fingerprint=config["key_fingerprint"])


def _readme(assignment: str, config: dict) -> str:
    return f"""# mha-lab autograder for {assignment}

Written by `mha release --gradescope`. Upload this zip on Gradescope's
"Configure Autograder" page (base image: Ubuntu 22.04 or 24.04). See
docs/gradescope.md in mha-lab for the walk-through.

- `setup.sh` installs Python 3.11+ if the image lacks it, a virtual
  environment in /autograder/mha-venv, and the grader wheel under `wheels/`
  (its dependencies come from PyPI); then it grades the reference solution
  once, so a broken build fails at once.
- `run_autograder` grades /autograder/submission (a .py or .ipynb under any
  name, or a folder) and writes /autograder/results/results.json.
- `assignment_key` is the key of this assignment alone (fingerprint
  {config['key_fingerprint']}), an HMAC of your course key: it does not reveal
  the course key or any other assignment's inputs. To reproduce a Gradescope
  score locally: `MHA_COURSE_KEY=$(cat assignment_key) mha grade ...`, with the
  student's entry named by their Gradescope e-mail address.
- Feedback language: {config['lang']}; hidden checks' results: visibility
  `{config['hidden_visibility']}`; test output format: `{config['output_format']}`.
"""
