"""`mha audit` tells surviving and misdiagnosed mutants apart."""

import json
import shutil

from click.testing import CliRunner

from conftest import FIXTURES, PROJECT
from grader.cli import root


def test_audit_of_the_project_library_is_clean():
    result = CliRunner().invoke(root, ["audit", "--json"])
    findings = json.loads(result.output)
    assert result.exit_code == 0
    assert len(findings) >= 50 and {f["verdict"] for f in findings} == {"ok"}


def test_audit_flags_a_survivor_a_misdiagnosis_and_a_losing_correct_module(tmp_path):
    reference = (PROJECT / "solutions" / "multihead_attention.py").read_text()
    (tmp_path / "survivor.py").write_text("# expect: softmax-unstable\n" + reference)
    shutil.copy(FIXTURES / "mutants" / "attention_no_scale.py", tmp_path / "mislabelled.py")
    text = (tmp_path / "mislabelled.py").read_text().replace("attention-no-scale", "attention-wrong-scale", 1)
    (tmp_path / "mislabelled.py").write_text(text)
    (tmp_path / "not_correct.py").write_text(
        "# expect: correct\n" + (FIXTURES / "mutants" / "softmax_unstable.py").read_text())
    result = CliRunner().invoke(root, ["audit", "--library", str(tmp_path), "--json"])
    verdicts = {f["path"].split("/")[-1]: f["verdict"] for f in json.loads(result.output)}
    assert result.exit_code == 1
    assert verdicts == {"survivor.py": "survives", "mislabelled.py": "misdiagnosed", "not_correct.py": "loses-points"}
