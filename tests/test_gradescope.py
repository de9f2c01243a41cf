"""`mha release --gradescope`: the bundle, what run_autograder writes, and the bundle installed by its own setup.sh."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import PROJECT, mutants
from grader.authoring.autograder import grade_upload, student_of
from grader.authoring.gradescope import build_gradescope_bundle, fingerprint, keep_in_wheel
from grader.cli import root
from grader.render.gradescope import gradescope_results
from grader.results import SubmissionResult, TestResult
from grader.seeding import assignment_key

ASSIGNMENT = "multihead_attention"
DEMO = PROJECT / "examples" / "demo_class"
REFERENCE = PROJECT / "solutions" / f"{ASSIGNMENT}.py"
NO_SCALE = mutants(ASSIGNMENT) / "mistakes" / "attention_no_scale.py"
NOTEBOOK = DEMO / "ines" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
FOLDER = DEMO / "gabriel"

# What Gradescope's harness gets, one upload each: the submitter's e-mail names the
# entry of the same file in a class folder for `mha grade`.
UPLOADS = {
    "alice@example.edu": ("file", REFERENCE, "My Attempt (final) v2.py"),
    "bob@example.edu": ("file", NO_SCALE, "hw3.py"),
    "carol@example.edu": ("file", NOTEBOOK, "attention.ipynb"),
    "dave@example.edu": ("folder", FOLDER, None),
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    with pytest.MonkeyPatch.context() as patch:  # the autouse key fixture is function-scoped
        patch.setenv("MHA_COURSE_KEY", "test-course-key")
        return build_gradescope_bundle(target=tmp_path_factory.mktemp("gradescope"), assignment=ASSIGNMENT).archive


def unpack(bundle: Path, root_folder: Path) -> Path:
    """Lay the bundle out as Gradescope does: the zip's contents in ROOT/source."""
    (root_folder / "source").mkdir(parents=True)
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root_folder / "source")
    for entry in zipfile.ZipFile(bundle).infolist():
        os.chmod(root_folder / "source" / entry.filename, (entry.external_attr >> 16) & 0o777)
    (root_folder / "results").mkdir()
    return root_folder


def place(root_folder: Path, student: str) -> None:
    """Put one upload in ROOT/submission and say who sent it in submission_metadata.json."""
    kind, source, name = UPLOADS[student]
    submission = root_folder / "submission"
    shutil.rmtree(submission, ignore_errors=True)
    if kind == "folder":
        shutil.copytree(source, submission)
    else:
        submission.mkdir()
        shutil.copy(source, submission / name)
    metadata = {"id": 1, "users": [{"email": student, "id": 1000 + len(student), "name": student.split("@")[0]}],
                "assignment": {"title": "Multi-head attention"}}
    (root_folder / "submission_metadata.json").write_text(json.dumps(metadata), encoding="utf-8")


def class_folder(folder: Path) -> Path:
    """The same uploads as one class for `mha grade`: an entry per student, named by the e-mail."""
    for student, (kind, source, name) in UPLOADS.items():
        if kind == "folder":
            shutil.copytree(source, folder / student)
        else:
            (folder / student).mkdir(parents=True)
            shutil.copy(source, folder / student / name)
    return folder


def mha_grade(submissions: Path, out: Path) -> dict[str, dict]:
    """`mha grade` as the instructor runs it, with the key the bundle carries."""
    environment = dict(os.environ, MHA_COURSE_KEY=assignment_key(ASSIGNMENT, key="test-course-key"))
    done = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(submissions), "--out", str(out)],
                          env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return {result["student"]: result for result in json.loads((out / "results.json").read_text(encoding="utf-8"))}


# ---- the bundle -----------------------------------------------------------------------------
def test_bundle_holds_the_scripts_at_its_root_and_what_pypi_lacks(bundle):
    with zipfile.ZipFile(bundle) as archive:
        entries = {entry.filename: entry for entry in archive.infolist()}
        assert {"setup.sh", "run_autograder", "autograder.json", "assignment_key",
                f"solutions/{ASSIGNMENT}.py"} <= set(entries)
        for script in ("setup.sh", "run_autograder"):
            assert (entries[script].external_attr >> 16) & 0o111, f"{script} is not executable"
            assert archive.read(script).startswith(b"#!/usr/bin/env bash\n")
        wheels = [name for name in entries if name.startswith("wheels/") and name.endswith(".whl")]
        assert len(wheels) == 1
        texts = b"".join(archive.read(name) for name in entries)
        key = archive.read("assignment_key").decode().strip()
        config = json.loads(archive.read("autograder.json"))
        wheel_names = set(zipfile.ZipFile(archive.open(wheels[0])).namelist())
    assert b"test-course-key" not in texts, "the course key itself must not be in the bundle"
    assert key == assignment_key(ASSIGNMENT, key="test-course-key") != assignment_key("kv_cache", key="test-course-key")
    assert config["assignment"] == ASSIGNMENT and config["key_fingerprint"] == fingerprint(key)
    assert any(name.startswith(f"grader/assignments/{ASSIGNMENT}/hidden/") for name in wheel_names)
    assert not any(name.startswith("grader/assignments/kv_cache/hidden/") for name in wheel_names)
    assert "grader/authoring/templates/gradescope/setup.sh" in wheel_names
    assert any(name.endswith(".dist-info/entry_points.txt") for name in wheel_names)


def test_only_other_assignments_hidden_checks_stay_out_of_the_wheel():
    assert keep_in_wheel(f"assignments/{ASSIGNMENT}/hidden/test_x.py", ASSIGNMENT)
    assert keep_in_wheel("assignments/kv_cache/public/test_x.py", ASSIGNMENT)
    assert not keep_in_wheel("assignments/kv_cache/hidden/test_x.py", ASSIGNMENT)


def test_the_bundle_is_the_same_bytes_when_built_again(bundle, tmp_path):
    again = build_gradescope_bundle(target=tmp_path, assignment=ASSIGNMENT).archive
    assert again.read_bytes() == bundle.read_bytes()


def test_release_verb_writes_the_bundle_and_refuses_to_overwrite(tmp_path):
    runner = CliRunner()
    first = runner.invoke(root, ["release", "--gradescope", str(tmp_path), "--gradescope-format", "html", "--json"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)["gradescope"]
    assert Path(report["archive"]).is_file() and report["assignment"] == ASSIGNMENT
    config = json.loads(zipfile.ZipFile(report["archive"]).read("autograder.json"))
    assert config["output_format"] == "html" and config["hidden_visibility"] == "after_published"
    again = runner.invoke(root, ["release", "--gradescope", str(tmp_path)])
    assert again.exit_code == 2 and "--force" in again.output


# ---- who submitted -------------------------------------------------------------------------
def test_student_id_is_the_email_of_each_submitter(tmp_path):
    metadata = tmp_path / "submission_metadata.json"
    metadata.write_text(json.dumps({"users": [{"email": "Bob@X.org", "id": 2}, {"email": "", "id": 1}]}))
    assert student_of(metadata) == "1+bob@x.org"
    assert student_of(tmp_path / "missing.json") == "student"


# ---- results.json, in process ----------------------------------------------------------------
def test_run_autograder_grades_every_kind_of_upload_as_mha_grade_does(bundle, tmp_path):
    root_folder = unpack(bundle, tmp_path / "autograder")
    expected = mha_grade(class_folder(tmp_path / "class"), tmp_path / "out")
    for student in UPLOADS:
        place(root_folder, student)
        results = grade_upload(root=root_folder)
        assert results["extra_data"]["student"] == student
        assert results["score"] == expected[student]["score"], student
        assert [test["score"] for test in results["tests"]] == [test["score"] for test in expected[student]["tests"]]
    assert expected["alice@example.edu"]["score"] == expected["alice@example.edu"]["max_score"]
    assert expected["bob@example.edu"]["score"] < expected["bob@example.edu"]["max_score"]


def test_results_follow_gradescope_format_and_hide_hidden_checks(bundle, tmp_path):
    root_folder = unpack(bundle, tmp_path / "autograder")
    place(root_folder, "bob@example.edu")
    results = grade_upload(root=root_folder)
    assert {"score", "output", "tests", "output_format", "stdout_visibility"} <= set(results)
    assert "hw3.py" in results["output"] and "hidden checks" in results["output"]
    tests = results["tests"]
    assert all({"name", "score", "max_score", "output", "visibility", "status", "number"} <= set(t) for t in tests)
    assert {t["visibility"] for t in tests} == {"visible", "after_published"}
    assert sum(t["score"] for t in tests) == results["score"]
    failed = [t for t in tests if t["status"] == "failed"]
    assert failed and all(t["output"] for t in failed)
    attention = [t for t in failed if t["name"].startswith("scaled_dot_product_attention:")]
    diagnosed = [t for t in attention if "attention-no-scale" in t["output"] and "sqrt" in t["output"]]
    assert len(diagnosed) >= 2, attention  # the drawn-input checks name the mistake, with why and a hint
    assert "no-scale" not in results["output"], "the summary must not give the hidden checks' results away"
    assert tests[0]["name"].startswith("softmax: ") and tests[0]["number"] == "1.1"


def test_the_bundle_grades_with_its_own_key_and_solutions_whatever_the_environment_says(bundle, tmp_path,
                                                                                      monkeypatch):
    from grader.grading import calibration

    root_folder = unpack(bundle, tmp_path / "autograder")
    place(root_folder, "bob@example.edu")
    expected = grade_upload(root=root_folder)
    monkeypatch.setenv("MHA_COURSE_KEY", "another-course")
    monkeypatch.setenv("MHA_SOLUTIONS", str(tmp_path / "no-solutions"))
    monkeypatch.setenv("MHA_CONFIG_DIR", str(tmp_path / "config"))
    before = dict(os.environ)
    calibration.forget_run((ASSIGNMENT, 1.0))  # timed again, from the solutions the bundle carries
    again = grade_upload(root=root_folder)
    assert dict(os.environ) == before  # the paths travel as arguments, not through the environment
    assert [(t["name"], t["score"], t["output"]) for t in again["tests"]] == \
        [(t["name"], t["score"], t["output"]) for t in expected["tests"]]  # the same drawn inputs: the bundle's key
    assert "not calibrated" not in again["extra_data"]["isolation"]  # the bundle's reference timed the limits
    assert not (tmp_path / "config").exists()


def test_an_upload_with_nothing_to_grade_gets_a_visible_reason(bundle, tmp_path):
    root_folder = unpack(bundle, tmp_path / "autograder")
    place(root_folder, "alice@example.edu")
    shutil.copy(NO_SCALE, root_folder / "submission" / "helper.py")  # two files, neither named after the assignment
    results = grade_upload(root=root_folder)
    assert results["score"] == 0 and results["tests"][0]["visibility"] == "visible"
    assert "helper.py" in results["output"] and "My Attempt" in results["output"]


def test_a_container_without_landlock_and_namespaces_grades_the_same_and_says_so(bundle, tmp_path, monkeypatch):
    from grader.sandbox import isolation

    monkeypatch.setattr(isolation, "_WARNED", set())  # each missing layer is warned of once a process
    root_folder = unpack(bundle, tmp_path / "autograder")
    place(root_folder, "bob@example.edu")
    full = grade_upload(root=root_folder)
    with pytest.warns(UserWarning):
        bare = grade_upload(root=root_folder, without=("landlock", "namespaces"))
    assert "WARNING:" in bare["extra_data"]["isolation"] and "WARNING:" not in full["extra_data"]["isolation"]
    assert bare["score"] == full["score"]


def test_renderer_escapes_student_text_in_html_and_markdown():
    test = TestResult(name="test_softmax_rows_sum_to_one", function="softmax", outcome="error", score=0.0,
                      max_score=1.0, misconception="error", message="ValueError: <script>alert(1)</script>")
    result = SubmissionResult(student="s", status="graded", error=None, score=0.0, max_score=1.0,
                              assignment="multihead_attention", tests=(test,))
    for output_format in ("md", "html"):
        output = gradescope_results(result, output_format=output_format)["tests"][0]["output"]
        assert "<script>" not in output and "&lt;script&gt;" in output
    chinese = gradescope_results(result, lang="zh", output_format="md")["tests"][0]["output"]
    assert "提示" in chinese


# ---- the bundle on a fresh machine: setup.sh, then run_autograder ----------------------------------
def _missing_tool() -> str | None:
    if shutil.which("bash") is None:
        return "bash is not installed"
    base = getattr(sys, "_base_executable", sys.executable)
    probe = subprocess.run([base, "-c", "import ensurepip, venv"], capture_output=True)
    return None if probe.returncode == 0 else f"{base} cannot make a virtual environment (no ensurepip)"


@pytest.mark.slow
def test_setup_sh_installs_the_bundle_and_run_autograder_matches_mha_grade(bundle, tmp_path, tmp_path_factory):
    reason = _missing_tool()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Gradescope test must run in CI: {reason}")
        pytest.skip(reason)
    from wheelhouse import build_wheelhouse

    wheels = tmp_path_factory.mktemp("wheelhouse")
    build_wheelhouse(wheels)
    root_folder = unpack(bundle, tmp_path / "autograder")
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", "VIRTUAL_ENV", "MHA_COURSE_KEY", "MHA_SOLUTIONS", "MHA_CONFIG_DIR")}
    environment |= {"AUTOGRADER_ROOT": str(root_folder), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels),
                    "MHA_PYTHON": getattr(sys, "_base_executable", sys.executable), "PIP_NO_CACHE_DIR": "1"}
    started = time.monotonic()
    setup = subprocess.run(["bash", str(root_folder / "source" / "setup.sh")], cwd=root_folder / "source",
                           env=environment, capture_output=True, text=True)
    setup_seconds = time.monotonic() - started
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert "self-test: the reference scores 60/60" in setup.stdout
    venv_python = root_folder / "mha-venv" / "bin" / "python"
    located = subprocess.run([str(venv_python), "-I", "-c", "import grader; print(grader.__file__)"],
                             env=environment, capture_output=True, text=True, check=True)
    assert Path(located.stdout.strip()).is_relative_to(root_folder / "mha-venv")
    assert (root_folder / "source" / "assignment_key").stat().st_mode & 0o077 == 0

    expected = mha_grade(class_folder(tmp_path / "class"), tmp_path / "out")
    timings = []
    for student in UPLOADS:
        place(root_folder, student)
        (root_folder / "results" / "results.json").unlink(missing_ok=True)
        started = time.monotonic()
        run = subprocess.run([str(root_folder / "source" / "run_autograder")], cwd=root_folder, env=environment,
                             capture_output=True, text=True)
        timings.append(time.monotonic() - started)
        assert run.returncode == 0, run.stdout + run.stderr
        results = json.loads((root_folder / "results" / "results.json").read_text(encoding="utf-8"))
        assert results["score"] == expected[student]["score"], (student, run.stdout)
        isolation = results["extra_data"]["isolation"]  # the same layers; the paths of the venvs differ
        assert isolation.split(" (")[0] == expected[student]["isolation"].split(" (")[0]
        assert ("WARNING:" in isolation) == ("WARNING:" in expected[student]["isolation"])
    print(f"\nsetup.sh {setup_seconds:.1f} s; run_autograder " + ", ".join(f"{t:.2f} s" for t in timings))


def test_an_upload_of_the_untouched_script_and_a_worked_notebook_grades_the_notebook(bundle, tmp_path):
    root_folder = unpack(bundle, tmp_path / "autograder")
    place(root_folder, "alice@example.edu")
    submission = root_folder / "submission"
    for path in list(submission.iterdir()):
        path.unlink()
    shutil.copy(PROJECT / "exercises" / f"{ASSIGNMENT}.py", submission / f"{ASSIGNMENT}.py")  # as handed out
    import nbformat

    worked = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(REFERENCE.read_text(encoding="utf-8"))])
    nbformat.write(worked, submission / f"{ASSIGNMENT}.ipynb")
    results = grade_upload(root=root_folder)
    assert results["extra_data"]["submission"] == f"{ASSIGNMENT}.ipynb"
    assert results["score"] == sum(test["max_score"] for test in results["tests"])
    shown = ASSIGNMENT.replace("_", "\\_")  # as Markdown shows it
    assert f"Graded `{shown}.ipynb`" in results["output"] and f"{shown}.py" in results["output"]
