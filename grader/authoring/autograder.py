"""What the Gradescope bundle's ``run_autograder`` runs: grade ``submission/`` into ``results/results.json``.

Gradescope lays out one submission per container (``AUTOGRADER_ROOT``,
default ``/autograder``):

    source/autograder.json            written by ``mha release --gradescope``: assignment, language, formats
    source/assignment_key             the key of this assignment (``grader.seeding.assignment_key``)
    source/solutions/<assignment>.py  the reference, for the hidden cases
    submission/                       what the student uploaded: a .py or .ipynb under any name, or a folder
    submission_metadata.json          who submitted (Gradescope writes it)
    results/results.json              what this module writes

Grading is ``mha grade``'s: the same checks (public and hidden), the seed
drawn from the key and the student id, and the same sandbox; where the
container lacks a layer, the result's ``isolation`` says so after
``WARNING:``. The student id is the submitter's e-mail address as Gradescope
gives it (several, joined by ``+``, for a group), so a student keeps their
inputs from one submission to the next.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.paths import Overrides, overridden

CONFIG_NAME = "autograder.json"
KEY_NAME = "assignment_key"
DEFAULT_ROOT = "/autograder"
ANONYMOUS = "student"  # the id when no metadata says who submitted (a local try-out)


@dataclass(frozen=True)
class BundleConfig:
    """``source/autograder.json``: what ``mha release --gradescope`` decided."""

    assignment: str
    lang: str
    hidden_visibility: str  # Gradescope visibility of the hidden checks' results
    output_format: str  # "md" or "html"

    @classmethod
    def read(cls, path: Path) -> BundleConfig:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(assignment=data["assignment"], lang=data["lang"], hidden_visibility=data["hidden_visibility"],
                   output_format=data["output_format"])


def student_of(metadata_file: Path) -> str:
    """The student id of this submission: the submitters' e-mail addresses (their Gradescope ids where absent)."""
    try:
        metadata = json.loads(Path(metadata_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ANONYMOUS
    names = []
    for user in metadata.get("users") or ():
        if isinstance(user, dict):
            name = str(user.get("email") or user.get("id") or "").strip().lower()
            if name:
                names.append(name)
    from grader.render.text_safety import clean_name

    return clean_name("+".join(sorted(set(names)))) or ANONYMOUS


def grade_upload(*, root: Path, without: tuple[str, ...] = ()) -> dict:
    """Grade ``root/submission`` as configured in ``root/source``; returns Gradescope's results object.

    ``without`` leaves sandbox layers out (``grader.sandbox.client.start_server``),
    to see what a container lacking them gives.
    """
    from grader.content.messages import Message
    from grader.entries.entry import submission_in_folder, with_entry
    from grader.grading.grade import grade_submission, plan_checks
    from grader.grading.submitted import entry_source
    from grader.render.gradescope import gradescope_results, summary_of
    from grader.render.text_safety import clean_name
    from grader.results import load_failure
    from grader.sandbox.client import start_server
    from grader.seeding import student_seed

    root = Path(root)
    source_folder = root / "source"
    config = BundleConfig.read(source_folder / CONFIG_NAME)
    key = (source_folder / KEY_NAME).read_text(encoding="utf-8").strip()
    with overridden(bundle_overrides(source_folder, key=key)):
        student = student_of(root / "submission_metadata.json")
        found = submission_in_folder("submission", root / "submission", assignment=config.assignment)
        graded_file = None
        source = found.refusal or entry_source(path=found.path, found=found.found,
                                                     name=clean_name(found.path.name))
        if isinstance(source, Message):
            result = load_failure(student=student, error=source.render(config.lang),
                                  max_score=plan_checks(assignment=config.assignment, visibility="all").max_score,
                                  assignment=config.assignment)
        else:
            graded_file = found.path.relative_to(root / "submission").as_posix()
            server = start_server(hidden=(str(source_folder.resolve()), str((root / "results").resolve())),
                                  without=without)
            try:
                result = grade_submission(source=source, student=student, assignment=config.assignment,
                                          visibility="all", seed=student_seed(student, key=key), lang=config.lang,
                                          server=server)
            finally:
                server.stop()
            result = with_entry(result, found, file=graded_file, lang=config.lang)
    results = gradescope_results(result, lang=config.lang, output_format=config.output_format,
                                 hidden_visibility=config.hidden_visibility,
                                 summary=summary_of(result, graded_file=graded_file, lang=config.lang))
    results["extra_data"] = {"student": student, "submission": graded_file, "isolation": result.isolation,
                             "seed_key": "assignment", "assignment": config.assignment}
    return results


def bundle_overrides(source: Path, *, key: str) -> Overrides:
    """The grader pointed at the bundle's solutions, its config folder inside the bundle, and the bundle's key
    as the only one that counts (whatever the platform's environment says)."""
    return Overrides(solutions=source / "solutions", config_dir=source / "config", course_key=key)


def self_test(*, root: Path) -> dict:
    """Grade the bundle's reference solution as a submission; raise SystemExit unless it earns full marks."""
    import shutil
    import tempfile

    root = Path(root)
    config = BundleConfig.read(root / "source" / CONFIG_NAME)
    with tempfile.TemporaryDirectory(prefix="mha-self-test-") as scratch:
        trial = Path(scratch)
        shutil.copytree(root / "source", trial / "source", symlinks=True)
        (trial / "submission").mkdir()
        shutil.copy(root / "source" / "solutions" / f"{config.assignment}.py", trial / "submission" / "reference.py")
        (trial / "results").mkdir()
        results = grade_upload(root=trial)
    full = sum(test.get("max_score", 0) for test in results["tests"])
    print(f"self-test: the reference scores {results['score']:g}/{full:g}; "
          f"isolation: {results['extra_data']['isolation']}")
    if results["score"] != full or full == 0:
        raise SystemExit("self-test: the reference solution does not get full marks; the bundle is broken")
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="run_autograder", description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", DEFAULT_ROOT),
                        help="Gradescope's root folder (default: $AUTOGRADER_ROOT or /autograder)")
    parser.add_argument("--self-test", action="store_true", help="grade the reference solution instead")
    options = parser.parse_args(argv)
    root = Path(options.root)
    if options.self_test:
        self_test(root=root)
        return
    results = grade_upload(root=root)
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n",
                                                   encoding="utf-8")
    extra = results["extra_data"]
    print(f"mha-lab graded {extra['submission'] or '(nothing)'} of {extra['student']}: {results['score']:g}; "
          f"isolation: {extra['isolation']}", file=sys.stdout)


if __name__ == "__main__":
    main()
