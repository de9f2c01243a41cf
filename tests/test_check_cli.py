"""`mha check` through the real CLI: reference, stubs, every mistake, other styles."""

import json
import os
import subprocess
import sys
import tomllib

import pytest
from click.testing import CliRunner

from conftest import MUTANTS, PROJECT
from grader.authoring.audit import library_modules
from grader.cli import root

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
STUB = PROJECT / "exercises" / "multihead_attention.py"
LIBRARY = library_modules(MUTANTS / "multihead_attention")
MISTAKES = [path for path, expected in LIBRARY if expected != "correct"]
CORRECT = [path for path, expected in LIBRARY if expected == "correct"]
SPLIT_NO_TRANSPOSE = MUTANTS / "multihead_attention" / "mistakes" / "split_heads_no_transpose.py"


def check_json(*args):
    result = CliRunner().invoke(root, ["check", *map(str, args), "--json"])
    return result.exit_code, json.loads(result.output)


def expected_id(path):
    return dict(LIBRARY)[path]


def expected_ids(path):
    """The catalog ids a library module has: none for an uncatalogued mistake, several for a double one."""
    return sorted(set(expected_id(path).split(", ")) - {"uncatalogued"})


def test_reference_scores_full_marks_with_all_checks():
    code, result = check_json(REFERENCE, "--all")
    assert code == 0
    assert result["status"] == "graded"
    assert result["score"] == result["max_score"] > 0
    assert result["misconceptions"] == []
    assert any(test["visibility"] == "hidden" for test in result["tests"])


def test_stubs_score_zero_with_not_implemented_everywhere():
    code, result = check_json(STUB)
    assert code == 1
    assert result["score"] == 0
    assert {test["misconception"] for test in result["tests"]} == {"not-implemented"}
    assert {test["function"] for test in result["tests"]} >= {
        "softmax", "scaled_dot_product_attention", "split_heads", "combine_heads", "forward"}


@pytest.mark.parametrize("path", MISTAKES, ids=lambda p: p.stem)
def test_each_mistake_is_diagnosed_as_itself(path):
    code, result = check_json(path, "--all")
    assert code == 1
    assert result["score"] < result["max_score"]
    assert result["misconceptions"] == expected_ids(path)


def test_every_catalog_id_has_a_mutant():
    catalog = tomllib.loads((PROJECT / "grader" / "content" / "misconceptions.toml").read_text())
    core = {entry["id"] for entry in catalog["misconception"]
            if entry["id"].startswith(("softmax-", "attention-", "split-heads-", "combine-heads-", "mha-"))}
    assert len(core) == 25
    assert core <= {misconception for path in MISTAKES for misconception in expected_ids(path)}


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_correct_variants_in_other_styles_get_full_marks(path):
    code, result = check_json(path, "--all")
    assert (code, result["score"], result["misconceptions"]) == (0, result["max_score"], [])


def test_json_matches_the_result_contract():
    _, result = check_json(SPLIT_NO_TRANSPOSE)
    assert {"student", "status", "error", "score", "max_score", "misconceptions", "tests"} <= set(result)
    assert result["score"] == pytest.approx(sum(test["score"] for test in result["tests"]))
    assert result["misconceptions"] == sorted(set(result["misconceptions"]))
    for test in result["tests"]:
        assert {"name", "function", "outcome", "score", "max_score", "misconception", "message"} <= set(test)
        assert test["outcome"] in ("passed", "failed", "error", "timeout")
        assert 0 <= test["score"] <= test["max_score"]


def test_root_cause_is_named_when_split_heads_breaks_forward():
    _, result = check_json(SPLIT_NO_TRANSPOSE)
    forward = [test for test in result["tests"] if test["function"] == "forward" and test["outcome"] != "passed"]
    assert forward
    # checks with a size of one name no mistake (many coincide there) but still point at split_heads
    named = [test for test in forward if test["misconception"] not in ("numeric-mismatch", "wrong-shape", "error")]
    assert named and all(test["misconception"] == "split-heads-no-transpose" for test in named)
    assert all(test["root_cause"] == "split_heads" and "split_heads" in test["message"] for test in forward)


def test_function_filter_runs_only_that_function():
    _, result = check_json(REFERENCE, "--function", "combine_heads")
    assert {test["function"] for test in result["tests"]} == {"combine_heads"}


def test_chinese_and_english_reports_show_the_catalog_texts():
    path = MUTANTS / "multihead_attention" / "mistakes" / "attention_no_scale.py"
    english = CliRunner().invoke(root, ["check", str(path), "--lang", "en"])
    chinese = CliRunner().invoke(root, ["check", str(path), "--lang", "zh"])
    assert english.exit_code == chinese.exit_code == 1
    assert "attention-no-scale" in english.output and "Hint" in english.output
    assert "提示" in chinese.output and "总分" in chinese.output


def test_locale_chooses_chinese(monkeypatch):
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    result = CliRunner().invoke(root, ["check", str(REFERENCE)])
    assert "全部检查通过" in result.output


def test_syntax_error_points_at_the_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import numpy as np\n\ndef softmax(x):\n    return np.exp(x\n")
    code, result = check_json(broken)
    assert code == 1
    assert result["status"] == "error" and result["tests"] == []
    assert "SyntaxError" in result["error"] and "line 4" in result["error"]


def test_import_error_is_reported_not_raised(tmp_path):
    broken = tmp_path / "imports.py"
    broken.write_text("import numpy as np\nimport torch_that_is_not_there\n")
    code, result = check_json(broken)
    assert result["status"] == "error" and "ModuleNotFoundError" in result["error"] and "line 2" in result["error"]


def test_usage_errors_exit_2(tmp_path):
    assert CliRunner().invoke(root, ["check", str(tmp_path / "missing.py")]).exit_code == 2
    assert CliRunner().invoke(root, ["check", str(REFERENCE), "--function", "nope"]).exit_code == 2
    assert CliRunner().invoke(root, ["check", "--lang", "fr"]).exit_code == 2


def test_installed_command_checks_the_reference(tmp_path):
    env = dict(os.environ, MHA_COURSE_KEY="k")
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", str(REFERENCE), "--json"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] > 0
    mha = subprocess.run(["mha", "check", str(STUB)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert mha.returncode == 1 and "not implemented" in mha.stdout


@pytest.mark.parametrize("verb", ["check", "audit"])
def test_help(verb):
    result = CliRunner().invoke(root, [verb, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output
