"""Join the output folders of ``mha grade --shard K/N`` runs into one, as if graded at once.

Each folder is checked first (``grader.batch.signing``): its signature with
the course key, every number finite, every score the sum of its checks, every
student in the shard's share of the class. A folder that fails is refused
with a warning naming the file, and the others are merged all the same.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from grader import seeding
from grader.batch.adjustments import read_adjustments
from grader.batch.journal import Journal
from grader.batch.outputs import write_outputs
from grader.batch.signing import ShardRefused, SignedRun, check_shard, sign_outputs, verify_outputs
from grader.errors import UsageError
from grader.render.exports import read_results_json
from grader.render.text_safety import clean_strings
from grader.results import SubmissionResult
from grader.tally import BatchSummary

RUN_KEYS = ("assignment", "visibility", "submissions")
REFUSED = "refused "  # how the warning about a refused folder begins


def merge_runs(*, sources: list[Path], out: Path, lang: str | None = None, formats: tuple[str, ...] = (),
               overwrite: bool = False, adjustments: Path | None = None) -> tuple[BatchSummary, list[str]]:
    """Merge ``sources`` (folders holding results.json) into ``out``; returns the summary and warnings.

    The results keep the adjustments their shards applied, unless ``adjustments``
    (a CSV, ``grader.batch.adjustments``) replaces them for the whole class.
    """
    started = time.monotonic()
    out = Path(out)
    sources = [Path(source) for source in sources]
    table = read_adjustments(adjustments) if adjustments is not None else None
    if not sources:
        raise UsageError("name at least one output folder of `mha grade` to merge")
    if any(out.resolve() == source.resolve() for source in sources):
        raise UsageError(f"--out {out} is one of the folders to merge; choose a new folder")
    for source in sources:
        _run_of(source)  # a folder that is no output of `mha grade` at all: a usage error, as before
    course_key = seeding.course_key()
    checked, warnings, signed = [], [], {}
    for source in sources:
        try:
            signed[source] = verify_outputs(source=source, key=course_key)
            checked.append(source)
        except ShardRefused as refused:
            warnings.append(f"{REFUSED}{source}: {refused}")
    classes = {signed[source].students for source in checked}
    if len(classes) > 1:  # shards of different runs (or of a class that changed between them): the first run wins
        first_class = signed[checked[0]].students
        for source in [source for source in checked if signed[source].students != first_class]:
            warnings.append(f"{REFUSED}{source}: {source / 'signature.json'} lists another class than "
                            f"{checked[0]} (a shard of another run)")
            checked.remove(source)
    if not checked:
        raise UsageError("no folder could be merged: " + "; ".join(warnings))
    sources = checked
    runs = [_run_of(source) for source in sources]
    warnings += _check_runs(sources, runs)
    first = runs[0]
    lang = lang or first.get("lang") or "en"
    merged_run = {key: first.get(key) for key in RUN_KEYS} | {"shard": None, "lang": lang,
                                                              "merged_from": [str(s) for s in sources]}
    journal = Journal(out)
    moved = journal.open(merged_run, resume=False, overwrite=overwrite)
    owner: dict[str, Path] = {}
    try:
        for source in sources:
            try:
                results = _checked_results(source, run=signed[source])
            except (ShardRefused, UsageError) as refused:
                warnings.append(f"{REFUSED}{source}: {refused}")
                continue
            for result in results:
                student = result.student
                if student in owner:
                    raise UsageError(f"{student} was graded in both {owner[student]} and {source}; "
                                     "merge the shards of one run only")
                owner[student] = source
                journal.record(student, result)
        tally = write_outputs(out=out, journal=journal, students=sorted(owner), lang=lang, formats=formats,
                              title=f"mha grade: {first.get('assignment')}",
                              assignment=str(first.get("assignment") or ""), adjustments=table)
        sign_outputs(out=out, key=course_key, run=SignedRun(assignment=str(first.get("assignment") or ""),
                                                     visibility=str(first.get("visibility") or ""), shard=None,
                                                     students=tuple(sorted(owner))))
    finally:
        journal.close()
    summary = BatchSummary(out=out, students=len(owner), graded_now=len(owner), ignored=(), tally=tally,
                           elapsed=time.monotonic() - started, previous=moved,
                           unmatched_adjustments=tuple(sorted(set(table or ()) - set(owner))))
    return summary, warnings


def _run_of(source: Path) -> dict:
    if not (source / "results.json").is_file():
        raise UsageError(f"{source} holds no results.json; is it the --out folder of a finished `mha grade`?")
    run_file = source / "journal" / "run.json"
    try:
        return json.loads(run_file.read_text(encoding="utf-8")) if run_file.is_file() else {}
    except ValueError:
        raise UsageError(f"{run_file} is not valid JSON") from None


def _checked_results(source: Path, *, run: SignedRun) -> list[SubmissionResult]:
    """The results of ``source``'s results.json, cleaned and checked against its signed run (ShardRefused or
    UsageError if not)."""
    results = [clean_strings(result) for result in read_results_json(source / "results.json")]
    check_shard(results, run=run, origin=source / "results.json")
    return results


def _check_runs(sources: list[Path], runs: list[dict]) -> list[str]:
    """Refuse runs of different assignments or checks; warn about missing shards."""
    known = [(source, run) for source, run in zip(sources, runs) if run]
    for key in ("assignment", "visibility"):
        values = {run.get(key) for _, run in known}
        if len(values) > 1:
            raise UsageError(f"the folders graded different {key}s ({', '.join(sorted(map(str, values)))}); "
                             "merge shards of one run only")
    warnings = []
    shards = [run.get("shard") for _, run in known if run.get("shard")]
    counts = {int(shard.split("/")[1]) for shard in shards}
    if len(counts) > 1:
        warnings.append(f"the shards come from splits of different sizes: {', '.join(sorted(shards))}")
    elif counts:
        count = counts.pop()
        missing = sorted(set(range(1, count + 1)) - {int(shard.split("/")[0]) for shard in shards})
        if missing:
            warnings.append("missing shards: " + ", ".join(f"{index}/{count}" for index in missing)
                            + "; their students are not in the merged results")
    return warnings
