"""`mha merge` takes only what grading wrote: signed shards, finite scores that add up, students of the shard."""

import json
import shutil

from click.testing import CliRunner

from conftest import PROJECT
from grader.cli import root

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
STUB = PROJECT / "exercises" / "multihead_attention.py"


def shards(tmp_path, count=2):
    submissions = tmp_path / "class"
    submissions.mkdir(parents=True)
    for index, student in enumerate(("ann", "bea", "cai", "dev")):
        shutil.copy(REFERENCE if index % 2 == 0 else STUB, submissions / f"{student}.py")
    outs = []
    for index in range(1, count + 1):
        out = tmp_path / f"shard-{index}"
        done = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(out), "--shard", f"{index}/{count}",
                                         "--jobs", "1"])
        assert done.exit_code == 0, done.output
        assert (out / "signature.json").is_file()
        outs.append(out)
    return submissions, outs


def merge(tmp_path, outs, name="merged"):
    done = CliRunner().invoke(root, ["merge", *map(str, outs), "--out", str(tmp_path / name)])
    return done, {r["student"]: r for r in json.loads((tmp_path / name / "results.json").read_text())} \
        if (tmp_path / name / "results.json").is_file() else {}


def edit(out, change):
    path = out / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    change(results)
    path.write_text(json.dumps(results), encoding="utf-8")


def test_signed_shards_merge_into_what_one_run_gives(tmp_path):
    submissions, outs = shards(tmp_path)
    done, merged = merge(tmp_path, outs)
    assert done.exit_code == 0, done.output
    whole = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / "whole"), "--jobs", "1"])
    assert whole.exit_code == 0
    assert (tmp_path / "merged" / "grades.csv").read_bytes() == (tmp_path / "whole" / "grades.csv").read_bytes()
    assert "refused" not in done.output


def test_an_edited_shard_is_refused_by_name_and_the_rest_still_merges(tmp_path):
    _, outs = shards(tmp_path)

    def raise_scores(results):
        for result in results:
            result["score"] = result["max_score"]
    edit(outs[1], raise_scores)
    done, merged = merge(tmp_path, outs)
    assert done.exit_code == 1, done.output  # merged, and says that something was refused
    assert f"refused {outs[1]}" in done.output and "does not match its signature" in done.output
    assert set(merged) == {"ann", "cai"}  # shard 1's students, shard 2's left out


def test_a_forged_signature_or_none_is_refused(tmp_path, monkeypatch):
    _, outs = shards(tmp_path)
    (outs[0] / "signature.json").unlink()
    monkeypatch.setenv("MHA_COURSE_KEY", "test-course-key")
    done, merged = merge(tmp_path, outs)
    assert "signature.json is missing" in done.output and set(merged) == {"bea", "dev"}
    monkeypatch.setenv("MHA_COURSE_KEY", "another-key")  # whoever does not hold the course key cannot sign
    done, _ = merge(tmp_path, outs, name="other")
    assert done.exit_code == 2 and "no folder could be merged" in done.output


def test_non_finite_or_unbalanced_scores_and_foreign_students_are_refused_even_when_signed(tmp_path, monkeypatch):
    from grader.batch.signing import SignedRun, sign_outputs

    cases = {
        "nan": lambda results: results[0].update(score=float("nan")),
        "unbalanced": lambda results: results[0].update(score=results[0]["score"] + 1),
        "foreign": lambda results: results.append(dict(results[0], student="bea")),  # shard 2's student
    }
    for name, change in cases.items():
        _, outs = shards(tmp_path / name)
        edit(outs[0], change)
        # signed with the key, as a grading machine whose run went wrong would: the content is still checked
        header = json.loads((outs[0] / "signature.json").read_text())["run"]
        sign_outputs(out=outs[0], key="test-course-key", run=SignedRun(
            assignment=header["assignment"], visibility=header["visibility"], shard=header["shard"],
            students=tuple(header["students"])))
        done, merged = merge(tmp_path / name, outs)
        assert done.exit_code == 1, (name, done.output)
        assert f"refused {outs[0]}" in done.output and "Traceback" not in done.output, name
        assert set(merged) == {"bea", "dev"}, name
