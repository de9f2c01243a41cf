"""Hidden check: the extra memory grows with T x block, not with T x S.

The call runs in the worker under tracemalloc (``Sandbox.call_measured``);
the sequences are long enough that the full score matrix would be many
times larger than a block of it.
"""

import numpy as np

from grader.assignments.memory_efficient_attention.cases import (FUNCTION, MEMORY_BLOCK, MEMORY_D_K, MEMORY_LENGTHS,
                                                                 memory_inputs)
from grader.content.messages import Message
from grader.grading.case import same_value
from grader.grading.checks import CheckFailure, failure_from_error
from grader.grading.marker import mha

pytestmark = mha(function=FUNCTION, visibility="hidden")
FLOAT_BYTES = 8


def _plain_attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True) @ V


def _budget(length: int) -> int:
    """A few blocks of scores and a few query-sized arrays: far below one full score matrix."""
    return 8 * length * MEMORY_BLOCK * FLOAT_BYTES + 8 * length * MEMORY_D_K * FLOAT_BYTES


@mha(points=4, probes=("flash-materializes-scores",))
def test_peak_memory_grows_with_length_times_block(student, seed):
    peaks = {}
    for length in MEMORY_LENGTHS:
        Q, K, V = memory_inputs(seed, length)
        outcome = student.sandbox.call_measured(FUNCTION, Q, K, V, block_size=MEMORY_BLOCK)
        if outcome.error is not None:
            raise failure_from_error(FUNCTION, outcome)
        if outcome.peak_memory is None:
            raise CheckFailure(Message("memory_not_measured", {"function": FUNCTION}), misconception="error",
                               outcome="error")
        if not same_value(outcome.value, _plain_attention(Q, K, V)):
            raise CheckFailure(Message("long_sequence_wrong", {"length": length}), misconception="numeric-mismatch")
        peaks[length] = outcome.peak_memory
    short, long = MEMORY_LENGTHS
    growth = peaks[long] / max(peaks[short], 1)
    if peaks[long] > _budget(long) or growth > 3.0:
        raise CheckFailure(Message("memory_too_large", {
            "length": long, "block": MEMORY_BLOCK, "peak": f"{peaks[long] / 2**20:.1f}",
            "budget": f"{_budget(long) / 2**20:.1f}", "full": f"{long * long * FLOAT_BYTES / 2**20:.0f}",
            "growth": f"{growth:.1f}"}), misconception="flash-materializes-scores")
