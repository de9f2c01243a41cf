"""A check over the sizes of one (one query, one key, a batch of one) that says which of them went wrong.

At a size of one many mistakes give the same values (``SIZES_OF_ONE`` in the exercise's cases), so such a
failure shows the difference without naming a mistake; the sentence added here names the input that failed
and says where the mistake is named instead.
"""

from __future__ import annotations

from grader.content.messages import Message
from grader.grading.checks import CheckFailure, expect_values

SIZE_NAMES = {"one-query": "size_one_query", "one-key": "size_one_key", "one-batch": "size_one_batch"}


def expect_sizes_of_one(student, cases) -> None:
    """``expect_values`` over ``cases``; a failure first says which size of one it was."""
    try:
        expect_values(student, cases)
    except CheckFailure as failure:
        size = (failure.case.id.rsplit("/", 1)[-1] if failure.case is not None else "")
        if size in SIZE_NAMES:
            failure.messages = (Message("size_of_one_failed", {"size": Message(SIZE_NAMES[size])}),
                                *failure.messages)
        raise
