"""The training task: random letters, then a run of letters repeated to the end.

``<s> k w q f x m q f x m q f x m ...``: the first run cannot be predicted, but
from its second time on every next letter can, by finding where the current
letter came before and copying the letter that followed it. A two-layer
attention-only model learns exactly this with two cooperating heads: a
previous-token head in layer 1 writes "the letter before me" into each
position, and an induction head in layer 2 looks for the position whose
previous letter matches the current one (Olsson et al., 2022, "In-context
Learning and Induction Heads"). The run's length changes from sequence to
sequence, so no fixed offset can do the job.

Shape legend: ``B`` batch, ``T`` tokens (the start marker included).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.tinymodel.tokens import LETTERS, START_ID

SHORTEST_RUN = 3
LONGEST_RUN = 10


@dataclass(frozen=True)
class Batch:
    """Token ids and, per prediction, whether the task makes it determined."""

    ids: np.ndarray  # (B, T), start marker first
    repeated: np.ndarray  # (B, T - 1), True where the next token is determined: copied from the run
    run_lengths: np.ndarray  # (B,)
    run_starts: np.ndarray  # (B,), the position of the run's first letter


def repeated_runs(generator: np.random.Generator, *, batch: int, length: int,
                  shortest: int = SHORTEST_RUN, longest: int = LONGEST_RUN) -> Batch:
    """``batch`` sequences of ``length`` tokens: ``<s>``, random letters, then a run repeated to the end.

    The run's letters are distinct and do not occur in the random part before
    it, so each repeated letter has exactly one letter to copy; the random part
    (of random length, possibly none) moves the run to any position, so the
    heads must work everywhere, not just at the start.
    """
    if length - 1 < 2 * longest:
        raise ValueError(f"{length} tokens cannot hold <s> and two runs of {longest} letters")
    letters_count = len(LETTERS)
    runs = generator.integers(shortest, longest + 1, size=batch)  # (B,)
    ids = np.empty((batch, length), dtype=np.int64)
    ids[:, 0] = START_ID
    starts = np.empty(batch, dtype=np.int64)
    for row, run in enumerate(runs):
        order = generator.permutation(letters_count) + 1  # ids of the letters, shuffled
        letters, others = order[:run], order[run:]
        # At least two whole runs fit after the random part.
        starts[row] = 1 + generator.integers(0, length - 1 - 2 * run + 1)
        ids[row, 1:starts[row]] = generator.choice(others, size=starts[row] - 1)
        ids[row, starts[row]:] = letters[np.arange(length - starts[row]) % run]
    # Prediction t (from position t) is of token t + 1. It is determined once the letter at t
    # has been seen before, i.e. from the second run's first letter on; that letter itself
    # (predicted from the first run's last one) could as well have been a new letter.
    positions = np.arange(length - 1)[None, :]  # (1, T-1)
    repeated = positions >= (starts + runs)[:, None]  # (B, T-1)
    return Batch(ids=ids, repeated=repeated, run_lengths=runs, run_starts=starts)
