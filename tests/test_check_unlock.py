"""`mha check --unlock`: a question before a function's checks run the first time."""

import json

from click.testing import CliRunner

from conftest import PROJECT
from grader.cli import root
from grader.practice.unlocking import is_unlocked

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"


def test_a_wrong_answer_keeps_the_function_locked(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(root, ["check", str(REFERENCE), "--function", "split_heads", "--unlock", "--json"],
                                input="(1, 2)\n")
    assert result.exit_code == 2
    assert not is_unlocked("split_heads")


def test_unlocked_state_is_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    from grader.practice.unlocking import mark_unlocked

    mark_unlocked("split_heads")
    result = CliRunner().invoke(root, ["check", str(REFERENCE), "--function", "split_heads", "--unlock", "--json"])
    assert result.exit_code == 0
    assert {test["function"] for test in json.loads(result.output)["tests"]} == {"split_heads"}


def test_unlock_questions_stay_out_of_the_json(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    from grader.practice.unlocking import mark_unlocked

    mark_unlocked("softmax")
    runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
    result = runner.invoke(root, ["check", str(REFERENCE), "--function", "softmax", "--function", "split_heads",
                                  "--unlock", "--json"], input="(1, 2)\n")
    assert result.exit_code == 0
    assert {test["function"] for test in json.loads(result.stdout)["tests"]} == {"softmax"}
    assert "split_heads" in result.stderr


def test_one_run_asks_three_questions_then_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    functions = ["split_heads", "combine_heads", "forward", "scaled_dot_product_attention"]  # shape questions
    arguments = ["check", str(REFERENCE), "--unlock", "--lang", "en"]
    for name in functions:
        arguments += ["--function", name]
    result = CliRunner().invoke(root, arguments, input="(1, 2)\n" * 12)
    assert result.output.count("Try once more, with new numbers.") == 3 and result.output.count("Why:") == 3
    assert "scaled_dot_product_attention: a question comes first for these, next time" in result.output
    assert "Not checked yet: scaled_dot_product_attention, still locked" in result.output
    assert all(is_unlocked(name) for name in functions[:3]) and not is_unlocked(functions[3])
    assert result.exit_code == 0, result.output  # the three unlocked functions were checked, and passed
