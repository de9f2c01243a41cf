"""Which mistakes a result shows: one rule (``grader.render.rules.shown_mistakes``) for every renderer.

The terminal report, the feedback page and the notebook fragment of the same
result name exactly the mistakes the rule chooses, no more and no fewer.
"""

from __future__ import annotations

import io
import re

from rich.console import Console

from grader.render.feedback import render_markdown
from grader.render.notebook_html import result_to_html
from grader.render.rules import shown_mistakes
from grader.render.terminal import print_result
from grader.results import SubmissionResult, TestResult

SPECIFIC = "softmax-wrong-axis"  # a catalogued mistake of softmax
GENERIC = "numeric-mismatch"  # an outcome of no function


def result() -> SubmissionResult:
    tests = (
        # softmax: one check found the specific mistake, another only wrong values: the generic card is left out
        TestResult("test_softmax_values", "softmax", "failed", 0.0, 2.0, misconception=GENERIC, message="off"),
        TestResult("test_softmax_rows", "softmax", "failed", 0.0, 2.0, misconception=SPECIFIC, message="axis"),
        # attention: wrong values because softmax is wrong: the root cause explains it
        TestResult("test_attention_values", "scaled_dot_product_attention", "failed", 0.0, 3.0,
                   misconception=GENERIC, root_cause="softmax", message="off"),
        # split_heads: wrong values and nothing more specific: the generic card stays
        TestResult("test_split_heads_values", "split_heads", "failed", 0.0, 1.0, misconception=GENERIC,
                   message="off"),
        # an id from a newer catalog, and a check that passed: nothing to show
        TestResult("test_merge_heads_values", "merge_heads", "failed", 0.0, 1.0, misconception="from-the-future",
                   message="off"),
        TestResult("test_forward_values", "forward", "passed", 4.0, 4.0),
    )
    return SubmissionResult(assignment="multihead_attention", student="ann", status="graded", error=None, score=4.0,
                            max_score=13.0, misconceptions=(SPECIFIC,), tests=tests, duration=0.1, isolation="-")


def test_the_rule_leaves_out_a_generic_outcome_a_specific_finding_explains():
    shown = [[entry.id for entry in entries] for entries in shown_mistakes(result())]
    assert shown == [[], [SPECIFIC], [], [GENERIC], [], []]


def test_terminal_feedback_and_notebook_name_the_same_mistakes():
    expected = {SPECIFIC, GENERIC}
    console = Console(file=io.StringIO(), width=200, highlight=False, emoji=False)
    print_result(result(), file="ann.py", lang="en", console=console)
    terminal = console.file.getvalue()
    page = render_markdown(result(), lang="en")
    fragment = result_to_html(result(), "en")
    candidates = {SPECIFIC, GENERIC, "from-the-future"}
    assert {key for key in candidates if f"({key})" in terminal or f"[{key}]" in terminal} == expected, terminal
    assert {key for key in candidates if re.search(rf"### .*{re.escape(key)}", page)} == expected, page
    assert set(re.findall(r"class='mha-mistake[^']*' data-misconception='([^']+)'", fragment)) == expected
