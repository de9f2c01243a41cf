"""Every pair of a class compared, and every submission against the answer key.

``compare_documents`` fingerprints each submission of a class, and scores
all pairs at once: the submissions' fingerprints form a sparse
(students x fingerprints) matrix X, each fingerprint weighted by its rarity w
(``grader.similarity.weights``), and X diag(w) X^T holds the weighted overlap
of every pair, computed only where two students share a fingerprint that
counts (an index of fingerprints to students, not a loop over all pairs).
A pair's code score is the weighted Dice coefficient of their fingerprints,
2 |A & B|_w / (|A|_w + |B|_w), 0 to 1, scaled down while |A & B|_w is below
``ENOUGH`` (two students whose own code is three lines are not alike for
sharing them); shared rare mistakes raise it
(``grader.similarity.mistakes``). Evidence (the matching passages) is worked
out for the pairs listed.

The result is a signal for a person to look at, never a grade: nothing here
is read by the scoring, and a high score says "read these two side by side",
not "these two copied".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader.paths import exercise_path, solution_path
from grader.results import SubmissionResult
from grader.similarity.evidence import Passage, Text, passages
from grader.similarity.fingerprints import every_kgram, fingerprint
from grader.similarity.mistakes import SharedMistake, boost, index_mistakes, marks
from grader.similarity.sources import Document, Skipped, read_one
from grader.similarity.tokens import api_names, normalize
from grader.similarity.weights import REFERENCE_COMMON_SHARE, REFERENCE_FLAG, rarity_weights

ENOUGH = 12.0  # weighted fingerprints in common (about four lines of code) for a code score to count fully
TOP_PAIRS = 500  # pairs listed (with evidence), the most similar first
MIN_LISTED = 0.01  # a pair scoring less is not listed: nothing worth reading
REFERENCE = "answer key"


@dataclass(frozen=True)
class PairMatch:
    students: tuple[str, str]
    score: float  # 0..1, the code score raised by shared rare mistakes
    code_score: float  # weighted Dice of the fingerprints
    shares: tuple[float, float]  # of each student's own (counting) code, the part the other has too
    passages: tuple[Passage, ...] = ()
    mistakes: tuple[SharedMistake, ...] = ()

    def to_dict(self) -> dict:
        return {"students": list(self.students), "score": round(self.score, 4),
                "evidence": {"code_score": round(self.code_score, 4), "shares": [round(x, 4) for x in self.shares],
                             "passages": [passage.to_dict() for passage in self.passages],
                             "shared_mistakes": [mistake.to_dict() for mistake in self.mistakes]}}

    @classmethod
    def from_dict(cls, data: dict) -> PairMatch:
        evidence = data["evidence"]
        return cls(tuple(data["students"]), data["score"], evidence["code_score"], tuple(evidence["shares"]),
                   tuple(Passage.from_dict(item) for item in evidence["passages"]),
                   tuple(SharedMistake.from_dict(item) for item in evidence["shared_mistakes"]))


@dataclass(frozen=True)
class ReferenceMatch:
    student: str
    score: float  # weighted Dice against the reference
    flagged: bool  # matches the answer key
    passages: tuple[Passage, ...] = ()  # first: the student's file, second: the reference

    def to_dict(self) -> dict:
        return {"student": self.student, "score": round(self.score, 4), "matches_answer_key": self.flagged,
                "evidence": {"passages": [passage.to_dict() for passage in self.passages]}}

    @classmethod
    def from_dict(cls, data: dict) -> ReferenceMatch:
        return cls(data["student"], data["score"], data["matches_answer_key"],
                   tuple(Passage.from_dict(item) for item in data["evidence"]["passages"]))


@dataclass(frozen=True)
class SimilarityReport:
    assignment: str
    documents: tuple[Document, ...]
    pairs: tuple[PairMatch, ...]
    reference_matches: tuple[ReferenceMatch, ...]
    compared: int  # pairs compared: every pair of the documents
    skipped: tuple[Skipped, ...] = ()
    reference: Document | None = None
    mistakes_read: bool = False  # whether grading results were given
    settings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"assignment": self.assignment, "students": len(self.documents), "pairs_compared": self.compared,
                "pairs_listed": len(self.pairs),
                "pairs": [pair.to_dict() for pair in self.pairs],
                "reference_matches": [match.to_dict() for match in self.reference_matches],
                "files": {document.student: document.path for document in self.documents},
                "skipped": [{"student": item.student, "reason": item.reason} for item in self.skipped],
                "mistakes_compared": self.mistakes_read, "reference_file": self.reference.path if self.reference
                else None, "settings": self.settings,
                "note": "A signal for a person to read, never a grade: no score depends on it."}


class _Silent:
    def begin(self, stage: str, total: int) -> None: ...
    def advance(self) -> None: ...
    def end(self) -> None: ...


def unexplained(documents: list[Document], results: list[SubmissionResult]) -> dict[str, Path]:
    """The files of the students whose results show a failure no catalog id explains."""
    by_student, _ = _marks_by_student(documents, results)
    return {document.student: document.file for document, found in zip(documents, by_student)
            if document.file is not None and any(mark[0] == "failure" for mark in found)}


def compare_documents(*, documents: list[Document], assignment: str,
                      results: list[SubmissionResult] | None = None,
                      progress=None, top: int = TOP_PAIRS, skipped: tuple[Skipped, ...] = (),
                      values: dict[str, set] | None = None) -> SimilarityReport:
    """Compare every pair of ``documents``, and each with the reference (``grader.similarity.run`` reads them).

    With ``results`` (``mha grade``'s), shared rare mistakes count too;
    ``values``: more marks by student (``grader.similarity.values``).
    """
    progress = progress or _Silent()
    stub = read_one(exercise_path(assignment), student="stub")
    reference = read_one(solution_path(assignment), student=REFERENCE)
    api = api_names("\n".join(stub.cells)) if stub else frozenset()
    progress.begin("fingerprinting", len(documents))  # a stage key: content/similarity.toml stage_*
    texts = []
    for document in documents:
        texts.append(_text(document, api))
        progress.advance()
    progress.end()
    boiler_stub = every_kgram(normalize(stub.cells, api=api)) if stub else np.zeros(0, dtype=np.int64)
    reference_text = _text(reference, api) if reference is not None else None
    boiler = np.union1d(boiler_stub, every_kgram(reference_text.tokens)) if reference_text else boiler_stub
    index = FingerprintIndex.build(texts, boilerplate=boiler)
    code = index.code_scores()
    by_student, graded = _marks_by_student(documents, results)
    if graded and values is not None:
        by_student = [found | values.get(document.student, set()) for document, found in zip(documents, by_student)]
    mistake_index = index_mistakes(by_student, class_size=len(texts)) if graded else None
    scored = []
    for first, second in set(code) | (set(mistake_index.pairs()) if mistake_index else set()):
        dice, share_first, share_second = code.get((first, second), (0.0, 0.0, 0.0))
        shared = mistake_index.shared(first, second, by_student) if mistake_index else ()
        score = 1.0 - (1.0 - dice) * (1.0 - boost(shared))
        scored.append((score, dice, first, second, (min(share_first, 1.0), min(share_second, 1.0)), shared))
    scored.sort(key=lambda item: (-item[0], -item[1], documents[item[2]].student, documents[item[3]].student))
    listed = [item for item in scored[:top] if item[0] >= MIN_LISTED]
    counting = np.sort(index.columns[index.weights > 0])
    progress.begin("evidence", len(listed))
    pairs = []
    for score, dice, first, second, shares, shared in listed:
        pairs.append(PairMatch((documents[first].student, documents[second].student), score, dice, shares,
                               passages(texts[first], texts[second], counting=counting), shared))
        progress.advance()
    progress.end()
    matches = _reference_matches(documents, texts, reference_text, index, boiler_stub) if reference_text else ()
    count = len(texts)
    return SimilarityReport(assignment, tuple(documents), tuple(pairs), matches, count * (count - 1) // 2,
                            tuple(skipped), reference, graded,
                            {"top_pairs": top, "min_listed_score": MIN_LISTED, "reference_flag": REFERENCE_FLAG,
                             "public_fixtures_run": bool(graded and values is not None)})


def _text(document: Document, api: frozenset[str]) -> Text:
    tokens = normalize(document.cells, api=api)
    return Text(tokens, fingerprint(tokens), document.labels)


@dataclass(frozen=True)
class FingerprintIndex:
    """The class's fingerprints as a sparse (students x fingerprints) matrix, each fingerprint weighted."""

    columns: np.ndarray  # (M,) the fingerprint of each column, sorted
    held: object  # (N, M) scipy CSR matrix, 1 where a student holds a fingerprint
    holders: np.ndarray  # (M,) students holding each
    weights: np.ndarray  # (M,) its rarity weight; 0 for boilerplate

    @classmethod
    def build(cls, texts: list[Text], *, boilerplate: np.ndarray) -> FingerprintIndex:
        from scipy import sparse

        uniques = [text.fingerprints.unique for text in texts]
        everything = np.concatenate(uniques) if uniques else np.zeros(0, dtype=np.int64)
        columns, column = np.unique(everything, return_inverse=True)
        rows = np.repeat(np.arange(len(texts)), [len(found) for found in uniques])
        held = sparse.csr_matrix((np.ones(len(column)), (rows, column)), shape=(len(texts), len(columns)))
        holders = np.asarray(held.sum(axis=0)).ravel()
        weights = rarity_weights(holders, class_size=len(texts))
        weights[np.isin(columns, boilerplate)] = 0.0
        return cls(columns, held, holders, weights)

    def code_scores(self) -> dict[tuple[int, int], tuple[float, float, float]]:
        """(first, second) -> (code score, share of first's code, share of second's), for pairs sharing any."""
        from scipy import sparse

        sizes = self.held @ self.weights  # (N,) each student's weighted code
        counting = self.weights > 0
        kept = self.held[:, counting]
        overlap = sparse.triu(kept @ sparse.diags(self.weights[counting]) @ kept.T, k=1).tocoo()  # (N, N)
        code = {}
        for first, second, value in zip(overlap.row.tolist(), overlap.col.tolist(), overlap.data.tolist()):
            total = sizes[first] + sizes[second]
            if total > 0 and value > 0:  # a few fingerprints alike are a few lines alike: weak, however alike
                dice = min(1.0, float(2 * value / total)) * min(1.0, float(value) / ENOUGH)
                code[(first, second)] = (dice, float(value / max(sizes[first], 1e-12)),
                                         float(value / max(sizes[second], 1e-12)))
        return code


def _marks_by_student(documents: list[Document], results: list[SubmissionResult] | None) -> tuple[list[set], bool]:
    if results is None:
        return [set() for _ in documents], False
    found = {result.student: marks(result) for result in results}
    return [found.get(document.student, set()) for document in documents], True


def _reference_matches(documents, texts, reference_text: Text, index: FingerprintIndex, boiler_stub):
    """Each submission against the reference: weighted Dice, fingerprints weighted by rarity in the class."""
    count = len(documents)
    weights = rarity_weights(index.holders, class_size=count, common_share=REFERENCE_COMMON_SHARE)
    weights[np.isin(index.columns, boiler_stub)] = 0.0
    key = np.setdiff1d(reference_text.fingerprints.unique, boiler_stub)
    key_weights = np.where(np.isin(index.columns, key), weights, 0.0)
    overlap = index.held @ key_weights  # (N,)
    sizes = index.held @ weights
    absent = np.setdiff1d(key, index.columns)  # a key fingerprint no student has weighs 1 (held by nobody is rare)
    key_size = float(key_weights.sum()) + len(absent)
    counting = np.sort(np.union1d(index.columns[weights > 0], absent))
    matches = []
    for student in range(count):
        total = sizes[student] + key_size
        score = min(1.0, float(2 * overlap[student] / total)) if total > 0 else 0.0
        if score <= 0:
            continue
        flagged = bool(score >= REFERENCE_FLAG)
        found = passages(texts[student], reference_text, counting=counting) if flagged or score >= 0.2 else ()
        matches.append(ReferenceMatch(documents[student].student, float(score), flagged, found))
    matches.sort(key=lambda match: (-match.score, match.student))
    return tuple(matches)
