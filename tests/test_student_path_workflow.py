""".github/workflows/student-path.yml: read with pyyaml, its commands checked, its POSIX steps run here.

GitHub's runners cannot be reached from here, so the workflow is held to what
can be: it parses, it runs on the three systems, every command in it exists
(verbs and options of ``mha``, the helper script's steps, the files it names),
the release README's install steps are the ones it runs, and its Linux leg
runs here, step by step, as a runner would run it.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import PROJECT
from grader.cli import root
from grader.i18n import LANGUAGES

WORKFLOW = PROJECT / ".github" / "workflows" / "student-path.yml"
EXPECT = PROJECT / ".github" / "student-path" / "expect.py"
ACTIONS = {"actions/checkout@v4", "actions/setup-python@v5", "actions/upload-artifact@v4",
           "actions/download-artifact@v4"}
PROGRAMS = {"python", "python3", "pip", "mha", "jupyter", "echo", "source"}  # what its run lines may start with
POSIX = {"bash", None}  # the shells of the Linux and macOS legs (None: the runner's default there, bash)


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def steps(job: str) -> list[dict]:
    return workflow()["jobs"][job]["steps"]


def step(job: str, name: str) -> dict:
    return next(item for item in steps(job) if item.get("name") == name)


def lines(item: dict) -> list[str]:
    return [line.strip() for line in item.get("run", "").splitlines() if line.strip()]


def test_the_workflow_builds_the_release_once_and_checks_it_on_three_systems():
    data = workflow()
    assert set(data["on"]) >= {"push", "pull_request"}
    assert data["jobs"]["student"]["needs"] == "release"
    assert set(data["jobs"]["student"]["strategy"]["matrix"]["os"]) == {"ubuntu-latest", "macos-latest",
                                                                        "windows-latest"}
    used = {item["uses"] for job in data["jobs"].values() for item in job["steps"] if "uses" in item}
    assert used <= ACTIONS, used - ACTIONS
    names = [item.get("name", "") for item in steps("student")]
    for wanted in ("correct code", "planted mistake", "hang", "notebook's check cells"):
        assert any(wanted in name for name in names), wanted


def test_the_student_legs_run_the_oldest_python_the_release_allows_and_the_newest():
    """A student downloads today's Python (3.13) as often as the course's (the release's lowest); both run."""
    import tomllib

    lowest = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    matrix = workflow()["jobs"]["student"]["strategy"]["matrix"]
    assert set(matrix["python"]) == {lowest.removeprefix(">="), "3.13"}
    assert step("student", "Set up Python")["with"]["python-version"] == "${{ matrix.python }}"
    assert "${{ matrix.python }}" in workflow()["jobs"]["student"]["name"]


def test_every_command_in_the_workflow_exists():
    for job in ("release", "student"):
        for item in steps(job):
            for line in lines(item):
                if line.startswith('"') or line.startswith(".venv\\"):  # PowerShell: a path or a pipeline
                    continue
                words = shlex.split(line)
                assert words[0] in PROGRAMS, line
                if words[0] == "mha":
                    assert_mha_accepts(words[1:])
                if words[0] == "python" and words[1].endswith("expect.py"):
                    assert (PROJECT / ".github" / "student-path" / "expect.py").is_file()
                    if words[2] == "run":  # the command it runs and holds to what it expects
                        assert "mha" in words, line
                        assert_mha_accepts(words[words.index("mha") + 1:])


def assert_mha_accepts(arguments: list[str]) -> None:
    """``mha VERB ARGS``: the verb and its options exist (asked of click, without running the verb)."""
    verb, arguments = arguments[0], arguments[1:]
    command = root.get_command(None, verb)
    assert command is not None, f"mha has no verb {verb}"
    known = {flag for parameter in command.params for flag in (*parameter.opts, *parameter.secondary_opts)}
    for word in arguments:
        if word.startswith("--"):
            assert word.split("=")[0] in known, f"mha {verb} has no option {word}"


def test_the_helper_gathers_the_code_it_checks(tmp_path):
    done = subprocess.run([sys.executable, str(EXPECT), "gather", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["buggy.py", "correct.py", "hanging.py"]


def test_the_helper_fails_a_step_whose_command_does_not_do_what_it_expects(tmp_path):
    from conftest import mutants

    buggy = mutants("multihead_attention") / "mistakes" / "split_heads_no_transpose.py"
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))

    def expect(*options):
        return subprocess.run([sys.executable, str(EXPECT), "run", *options, "mha", "check", str(buggy), "--json"],
                              capture_output=True, text=True, env=env, cwd=tmp_path)
    assert expect("--status", "1", "--misconception", "split-heads-no-transpose").returncode == 0
    wrong_status = expect("--status", "0")
    assert wrong_status.returncode == 1 and "expected exit status 0, got 1" in wrong_status.stderr
    wrong_finding = expect("--status", "1", "--misconception", "attention-no-scale")
    assert wrong_finding.returncode == 1 and "expected attention-no-scale among the findings" in wrong_finding.stderr
    no_hang = expect("--status", "1", "--timeout", "softmax")
    assert no_hang.returncode == 1 and "to time out" in no_hang.stderr
    not_served = expect("--status", "1", "--served")  # the tests' checks run with the warm server off
    assert not_served.returncode == 1 and "no check of 3 was served" in not_served.stderr


def readme_blocks(text: str) -> dict[str, list[str]]:
    """The README's fenced install blocks by language (bash, powershell), line by line."""
    return {kind: [line.strip() for line in body.strip().splitlines()]
            for kind, body in re.findall(r"```(bash|powershell)\n(.*?)```", text, re.DOTALL)}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_release_readme_install_steps_are_the_ones_the_workflow_runs(lang):
    from grader.authoring.release import student_readme
    from grader.grading.assignment import ASSIGNMENTS

    readme = student_readme(assignment="multihead_attention", functions=ASSIGNMENTS["multihead_attention"].functions,
                            notebooks=True, demo=False, lang=lang)
    blocks = readme_blocks(readme)
    assert set(blocks) == {"bash", "powershell"}
    posix = lines(step("student", "Install as the README says (macOS, Linux)"))
    windows = lines(step("student", "Install as the README says (Windows)"))
    assert posix[:len(blocks["bash"])] == blocks["bash"]
    assert windows[:len(blocks["powershell"])] == blocks["powershell"]
    assert step("student", "Install as the README says (Windows)")["shell"] == "pwsh"


# ---- the Linux leg, here ---------------------------------------------------------------------------
def copy_checkout(target: Path) -> Path:
    """The project as a runner's checkout has it: the files git knows, committed or not."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=PROJECT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = PROJECT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


class Runner:
    """Runs a job's steps as GitHub's runner does on Linux: bash -e per step, GITHUB_PATH read between steps."""

    def __init__(self, workspace: Path, env: dict):
        self.workspace, self.env = workspace, dict(env)
        self.path_file = workspace / "github_path"
        self.path_file.write_text("")
        self.env["GITHUB_PATH"] = str(self.path_file)

    def run(self, item: dict, *, between=None) -> subprocess.CompletedProcess:
        folder = self.workspace / item.get("working-directory", ".")
        script_lines = item["run"].splitlines()
        if between is not None:  # what the test provisions after a line (see below)
            at, extra = between
            script_lines = script_lines[:at] + [extra] + script_lines[at:]
        done = subprocess.run(["bash", "-e", "-c", "\n".join(script_lines)], cwd=folder, env=self.env,
                              capture_output=True, text=True, timeout=600)
        added = [line for line in self.path_file.read_text().splitlines() if line]
        if added:
            self.env["PATH"] = os.pathsep.join([*reversed(added), self.env["PATH"]])
            self.path_file.write_text("")
        assert done.returncode == 0, f"{item.get('name', item['run'])}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done


def provision(site_packages: Path) -> str:
    """A line run right after ``python3 -m venv .venv``: the new venv reads this environment's packages (a
    .pth file), and has the console scripts pip would have written for them (jupyter), so that
    ``pip install ".[notebook]"`` finds its dependencies installed instead of downloading them; the
    release itself is built and installed by pip, as on the runner."""
    ours = [path for path in map(Path, sys.path) if path.name == "site-packages" and (path / "numpy").is_dir()]
    pth = "\\n".join(str(path) for path in ours)
    return (f'printf "{pth}\\n" > "$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_path(\'purelib\'))")'
            f'/_workflow_test.pth" && printf "#!$PWD/.venv/bin/python\\nfrom jupyter_core.command import main\\n'
            f'main()\\n" > .venv/bin/jupyter && chmod +x .venv/bin/jupyter')


@pytest.mark.slow
def for_linux(condition: str | None) -> bool:
    """Whether a step's ``if`` (of the few forms the workflow uses) lets it run on the Linux runner."""
    if condition is None:
        return True
    return "runner.os != 'Linux'" not in condition and ("'Linux'" in condition or "!=" in condition)


def test_the_linux_leg_runs_here_step_by_step(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("no bash here")
    checkout = copy_checkout(tmp_path / "checkout")
    workspace = tmp_path / "student"
    (workspace / "project").mkdir(parents=True)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "MHA_SOLUTIONS", "MHA_EXERCISES", "VIRTUAL_ENV", "MHA_ISOLATION")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])

    # the release job, in the checkout, with this environment's interpreter (setup-python's, on the runner)
    release = Runner(checkout, env)
    build = step("release", "Build the student release")
    release.run({**build, "run": "\n".join(line for line in build["run"].splitlines()
                                          if not line.strip().startswith("python -m pip install"))})
    shutil.copytree(checkout / "student-release", workspace / "student-release")
    shutil.copytree(checkout / "student-code", workspace / "student-code")
    shutil.copytree(checkout / ".github", workspace / "project" / ".github")

    # the student job's steps for Linux: install as the README says, then every check
    student = Runner(workspace, env)
    for item in steps("student"):
        if "run" not in item or not for_linux(item.get("if")) or item.get("shell") not in POSIX:
            continue
        first = lines(item)[0] if lines(item) else ""
        done = student.run(item, between=(1, provision(Path())) if first == "python3 -m venv .venv" else None)
        if "expect.py run" in item["run"]:
            assert "exit status" in done.stdout
    mha = shutil.which("mha", path=student.env["PATH"])
    assert mha is not None and Path(mha).is_relative_to(workspace / "student-release" / ".venv")
    located = subprocess.run([str(Path(mha).parent / "python"), "-c", "import grader; print(grader.__file__)"],
                             capture_output=True, text=True, env=student.env, check=True, cwd=tmp_path).stdout
    assert Path(located.strip()).is_relative_to(workspace / "student-release" / ".venv")  # the release, installed
    # a later terminal, opened in another folder: mha check finds the release pip installed from
    elsewhere = tmp_path / "a new terminal"
    elsewhere.mkdir()
    done = subprocess.run([mha, "check", "--json"], capture_output=True, text=True, env=student.env, cwd=elsewhere)
    assert done.returncode == 1 and done.stderr == "", done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert Path(result["file"]) == workspace / "student-release" / "exercises" / "multihead_attention.py"
    assert {test["misconception"] for test in result["tests"]} == {"not-implemented"}  # the release's stubs
    executed = json.loads((workspace / "student-release" / "exercises" / "notebooks" / "checked.ipynb").read_text())
    assert any(str(cell.get("id", "")).startswith("check-") for cell in executed["cells"])
