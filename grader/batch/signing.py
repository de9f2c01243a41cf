"""Shard outputs signed with the course key, and checked before ``mha merge`` takes them.

``mha grade`` writes ``signature.json`` beside ``results.json``: what the run
was (assignment, visibility, shard, every student id of the class, so a
shard's share can be checked) and an HMAC-SHA256, keyed with the course key,
over that header and the bytes of ``results.json``. Only someone holding the
key (whoever graded) can make a signature that verifies; a shard whose
results were edited, or written by anyone else, is refused by ``mha merge``.

``check_shard`` then checks what a valid signature cannot: every number
finite, each graded score the sum of its checks' scores and no more than its
maximum, and each student one of the class and in the shard's own share
(``--shard K/N``: every N-th of the class sorted by id, from the K-th).
Standard library only (``hmac``): nothing here needs a dependency.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from dataclasses import dataclass
from pathlib import Path

from grader.files import atomic_write_text
from grader.results import SubmissionResult, TestResult

SIGNATURE_FILE = "signature.json"
SCHEMA = 1
TOLERANCE = 1e-6  # of a score against the sum of its checks (scores are rounded to 6 places)


class ShardRefused(Exception):
    """A shard that cannot be merged; the message names the file and the reason."""


@dataclass(frozen=True)
class SignedRun:
    """The header of a signature: what the shard says it graded."""

    assignment: str
    visibility: str
    shard: str | None  # "K/N", None for a whole class
    students: tuple[str, ...]  # every student id of the class, sorted (the whole class, not only the shard's)

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "assignment": self.assignment, "visibility": self.visibility,
                "shard": self.shard, "students": list(self.students)}


def sign_outputs(*, out: Path, run: SignedRun, key: str) -> None:
    """Write ``out/signature.json`` for ``out/results.json`` as it is now."""
    header = run.to_dict()
    atomic_write_text(Path(out) / SIGNATURE_FILE, json.dumps(
        {"run": header, "hmac_sha256": _digest(header, Path(out) / "results.json", key)}, indent=1) + "\n")


def verify_outputs(*, source: Path, key: str) -> SignedRun:
    """The signed header of ``source``'s outputs; ShardRefused when the signature is missing or does not verify."""
    path = Path(source) / SIGNATURE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        header, digest = data["run"], data["hmac_sha256"]
        run = SignedRun(assignment=str(header["assignment"]), visibility=str(header["visibility"]),
                        shard=header["shard"] if header["shard"] is None else str(header["shard"]),
                        students=tuple(str(student) for student in header["students"]))
    except FileNotFoundError:
        raise ShardRefused(f"{path} is missing: the shard is not signed (grade it again with `mha grade --shard`, "
                           "which signs its outputs with the course key)") from None
    except (OSError, ValueError, KeyError, TypeError) as bad:
        raise ShardRefused(f"{path} cannot be read ({type(bad).__name__}: {bad})") from None
    expected = _digest(header, Path(source) / "results.json", key)
    if not isinstance(digest, str) or not hmac.compare_digest(digest, expected):
        raise ShardRefused(f"{Path(source) / 'results.json'} does not match its signature in {path}: edited "
                           "since it was graded, or signed with another course key (is MHA_COURSE_KEY the one "
                           "the shards were graded with?)")
    return run


def check_shard(results: list[SubmissionResult], *, run: SignedRun, origin: Path) -> None:
    """ShardRefused when a result is not what grading could have written, or its student is not the shard's."""
    share = set(run.students)
    if run.shard is not None:
        index, count = (int(part) for part in run.shard.split("/"))
        share = set(sorted(run.students)[index - 1::count])
    for result in results:
        where = f"{origin}: {result.student!r}"
        if not isinstance(result.student, str) or result.student not in share:
            raise ShardRefused(f"{where} is not one of the shard's students"
                               + (f" (shard {run.shard} of a class of {len(run.students)})" if run.shard else ""))
        if not all(isinstance(test, TestResult) for test in result.tests):
            raise ShardRefused(f"{where} has tests that are not a list of checks")
        numbers = [result.score, result.max_score, *(value for test in result.tests
                                                     for value in (test.score, test.max_score))]
        if not all(_finite(value) for value in numbers):
            raise ShardRefused(f"{where} holds a score that is not a finite number")
        if result.status == "graded":
            total = sum(test.score for test in result.tests)
            if abs(total - result.score) > TOLERANCE:
                raise ShardRefused(f"{where} scores {result.score:g}; its checks add up to {total:g}")
            if any(test.score > test.max_score + TOLERANCE for test in result.tests):
                raise ShardRefused(f"{where} has a check scoring more than its maximum")
        elif result.score != 0:
            raise ShardRefused(f"{where} is an error scoring {result.score}; an error scores 0")


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _digest(header: dict, results: Path, key: str) -> str:
    mac = hmac.new(key.encode("utf-8"), digestmod=hashlib.sha256)
    mac.update(json.dumps(header, sort_keys=True, ensure_ascii=True).encode("ascii") + b"\n")
    try:
        with open(results, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                mac.update(chunk)
    except OSError as bad:
        raise ShardRefused(f"{results} cannot be read ({bad.strerror or bad})") from None
    return mac.hexdigest()
