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


def test_messages_travel_as_keys_and_render_in_the_language_asked_for(tmp_path):
    """Language at the edges: grade in English, merge in Chinese; every check message follows the merge."""
    import subprocess
    import sys

    from conftest import PROJECT

    source = (PROJECT / "solutions" / "multihead_attention.py").read_text(encoding="utf-8")
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "noscale.py").write_text(source.replace("/ np.sqrt(d_k)", ""), encoding="utf-8")
    (tmp_path / "class" / "broken.py").write_text("def softmax(x:\n", encoding="utf-8")
    mha = [sys.executable, "-m", "grader.cli"]
    env = {"MHA_COURSE_KEY": "language-test", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    import os
    env = {**os.environ, **env}
    subprocess.run(mha + ["grade", str(tmp_path / "class"), "--out", str(tmp_path / "en"), "--lang", "en"],
                   check=True, capture_output=True, env=env)
    merged = subprocess.run(mha + ["merge", str(tmp_path / "en"), "--out", str(tmp_path / "zh"), "--lang", "zh"],
                            check=True, capture_output=True, text=True, env=env)
    # the end-of-run summary follows the language too
    assert "已将 2 份提交的结果合并到" in merged.stdout and "名学生" in merged.stdout
    assert not any(word in merged.stdout for word in ("Merged", "students", "graded", "mean", "files:"))
    import json

    results = {r["student"]: r for r in json.loads((tmp_path / "en" / "results.json").read_text())}
    failing = [t for t in results["noscale"]["tests"] if t["outcome"] != "passed"]
    assert failing and all(t["messages"] for t in failing)
    assert "exactly what this mistake produces" in failing[0]["message"]
    chinese = (tmp_path / "zh" / "feedback" / "noscale.md").read_text(encoding="utf-8")
    assert "恰好是" in chinese and "exactly what this mistake produces" not in chinese
    broken = (tmp_path / "zh" / "feedback" / "broken.md").read_text(encoding="utf-8")
    assert "无法加载你的文件" in broken and "could not be loaded" not in broken
