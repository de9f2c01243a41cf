"""Results: the JSON contract and its round trip."""

import json

from grader.results import SubmissionResult, TestResult, load_failure, summarize


def test_round_trip_through_json():
    tests = [TestResult("test_a", "softmax", "passed", 2.0, 2.0),
             TestResult("test_b", "forward", "failed", 0.0, 3.0, "split-heads-no-transpose", "msg", "hidden",
                        "split_heads")]
    result = summarize(student="alice", tests=tests, max_score=5.0, assignment="multihead_attention",
                       catalog_ids=frozenset({"split-heads-no-transpose"}), notes=("n",))
    again = SubmissionResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    assert result.score == 2.0 and result.misconceptions == ("split-heads-no-transpose",)


def test_generic_outcomes_are_not_listed_as_misconceptions():
    tests = [TestResult("t", "softmax", "failed", 0.0, 1.0, "numeric-mismatch")]
    result = summarize(student="s", tests=tests, max_score=1.0, assignment="a", catalog_ids=frozenset({"x"}))
    assert result.misconceptions == ()


def test_load_failure_has_zero_score_and_no_tests():
    result = load_failure(student="s", error="SyntaxError", max_score=60.0, assignment="a")
    data = result.to_dict()
    assert (data["status"], data["score"], data["max_score"], data["tests"]) == ("error", 0.0, 60.0, [])
