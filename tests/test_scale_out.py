"""Grading one class across machines: the example jobs of examples/scale-out/, run here as their schedulers would.

Each scheduler starts N copies of the same command and tells each its index in
its own variable: a GitHub Actions matrix (``matrix.shard``,
``strategy.job-total``), a Slurm job array (``SLURM_ARRAY_TASK_ID``,
``SLURM_ARRAY_TASK_COUNT``), a Kubernetes Indexed Job (``JOB_COMPLETION_INDEX``
from 0). The test reads N and the commands from the example files, runs the N
shards as separate processes at once (as on separate machines, sharing only
the folder that the artifacts or the shared filesystem would), then the merge
step, and checks the merged outputs equal one run over the whole class.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import PROJECT

pytestmark = pytest.mark.slow  # N grading processes per scheduler

EXAMPLES = PROJECT / "examples" / "scale-out"
DEMO = PROJECT / "examples" / "demo_class"
KEY = "test-scale-out-key"
SLOW_ENTRIES = {"kemal_infinite_loop.py"}  # an infinite loop costs 25 s wherever it lands


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> dict:
    """The class, a `mha` command on PATH, and one full run to compare with."""
    base = tmp_path_factory.mktemp("scale-out")
    submissions = base / "submissions"
    submissions.mkdir()
    for entry in DEMO.iterdir():
        if entry.name in SLOW_ENTRIES:
            continue
        (shutil.copytree if entry.is_dir() else shutil.copy)(entry, submissions / entry.name)
    reference = (PROJECT / "solutions" / "multihead_attention.py").read_text(encoding="utf-8")
    for number in range(4):  # more students than shards, so that each shard has several
        (submissions / f"extra_{number}.py").write_text(reference.replace("/ np.sqrt(d_k)", "" if number % 2 else
                                                                          "/ np.sqrt(d_k)"), encoding="utf-8")
    tools = base / "bin"
    tools.mkdir()
    (tools / "mha").write_text(f"#!/bin/sh\nexec {sys.executable} -m grader.cli \"$@\"\n", encoding="utf-8")
    (tools / "mha").chmod(0o755)
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("SLURM_", "JOB_COMPLETION"))}
    environment |= {"PATH": f"{tools}{os.pathsep}{environment['PATH']}", "MHA_COURSE_KEY": KEY,
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), environment.get("PYTHONPATH")]))}
    started = time.monotonic()
    done = subprocess.run(["mha", "grade", str(submissions), "--out", str(base / "full")], env=environment,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return {"base": base, "submissions": submissions, "env": environment, "full": base / "full",
            "full_seconds": time.monotonic() - started}


def new_machine(workspace: dict, name: str) -> Path:
    """A working folder with the class in it, as a checkout or a shared volume would have."""
    folder = workspace["base"] / name
    shutil.copytree(workspace["submissions"], folder / "submissions")
    return folder


def run_at_once(commands: list[tuple[list[str], dict, Path]]) -> float:
    """Start every shard's process, then wait for all; returns the wall-clock seconds."""
    started = time.monotonic()
    running = [(subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True), command) for command, env, cwd in commands]
    for process, command in running:
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, f"{command}: {output}"
    return time.monotonic() - started


def assert_same_as_one_run(merged: Path, full: Path) -> None:
    assert (merged / "grades.csv").read_text(encoding="utf-8") == (full / "grades.csv").read_text(encoding="utf-8")

    def essentials(out: Path) -> dict:
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        return {r["student"]: (r["score"], r["status"], r["misconceptions"], r.get("seed"),
                               [(t["name"], t["outcome"], t["score"]) for t in r["tests"]]) for r in results}

    assert essentials(merged) == essentials(full)
    with open(full / "grades.csv", encoding="utf-8") as handle:
        students = [row["student"] for row in csv.DictReader(handle)]
    assert all((merged / "feedback" / f"{student}.html").is_file() for student in students)


def test_github_actions_matrix(workspace):
    workflow = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text(encoding="utf-8"))
    grade_job, merge_job = workflow["jobs"]["grade"], workflow["jobs"]["merge"]
    shards = grade_job["strategy"]["matrix"]["shard"]
    grade_step = next(step for step in grade_job["steps"] if "mha grade" in step.get("run", ""))
    upload = next(step for step in grade_job["steps"] if step.get("uses", "").startswith("actions/upload-artifact"))
    assert grade_step["env"]["MHA_COURSE_KEY"] == "${{ secrets.MHA_COURSE_KEY }}"
    machines = []
    for shard in shards:
        machine = new_machine(workspace, f"actions-{shard}")
        context = {"matrix.shard": str(shard), "strategy.job-total": str(len(shards)),
                   "secrets.MHA_COURSE_KEY": KEY}
        script = expand(grade_step["run"], context)
        machines.append((["bash", "-c", script], workspace["env"], machine))
    seconds = run_at_once(machines)
    runner = workspace["base"] / "actions-merge"
    download = next(step for step in merge_job["steps"] if step.get("uses", "").startswith("actions/download-artifact"))
    for shard, (_, _, machine) in zip(shards, machines):  # each artifact lands in <path>/<artifact name>
        name = expand(upload["with"]["name"], {"matrix.shard": str(shard)})
        shutil.copytree(machine / expand(upload["with"]["path"], {"matrix.shard": str(shard)}),
                        runner / download["with"]["path"] / name)
    merge_step = next(step for step in merge_job["steps"] if "mha merge" in step.get("run", ""))
    subprocess.run(["bash", "-c", merge_step["run"]], env=workspace["env"], cwd=runner, check=True,
                   capture_output=True)
    assert_same_as_one_run(runner / "graded", workspace["full"])
    print(f"\nGitHub Actions matrix: {len(shards)} shards at once {seconds:.1f} s; "
          f"one run {workspace['full_seconds']:.1f} s")


def test_slurm_job_array(workspace):
    script = (EXAMPLES / "slurm-grade.sbatch").read_text(encoding="utf-8")
    first, last = map(int, re.search(r"^#SBATCH --array=(\d+)-(\d+)$", script, re.MULTILINE).groups())
    cpus = re.search(r"^#SBATCH --cpus-per-task=(\d+)$", script, re.MULTILINE).group(1)
    shared = new_machine(workspace, "slurm")  # a job array shares the cluster's filesystem
    tasks = []
    for task_id in range(first, last + 1):
        env = dict(workspace["env"], SLURM_ARRAY_TASK_ID=str(task_id), SLURM_ARRAY_TASK_COUNT=str(last - first + 1),
                   SLURM_CPUS_PER_TASK=cpus, SLURM_ARRAY_JOB_ID="4242")
        tasks.append((["bash", str(EXAMPLES / "slurm-grade.sbatch")], env, shared))
    seconds = run_at_once(tasks)
    subprocess.run(["bash", str(EXAMPLES / "slurm-merge.sbatch")], env=workspace["env"], cwd=shared, check=True,
                   capture_output=True)
    assert_same_as_one_run(shared / "graded", workspace["full"])
    print(f"\nSlurm array: {last - first + 1} tasks at once {seconds:.1f} s; one run {workspace['full_seconds']:.1f} s")


@pytest.fixture()
def slurm(tmp_path):
    """A real single-node Slurm cluster (tests/slurm_cluster.py); CI installs its packages (.ci/run)."""
    from conftest import require
    from slurm_cluster import SlurmCluster, missing

    reason = missing()
    require(reason is None, f"no Slurm cluster can start here: {reason}")
    cluster = SlurmCluster(Path("/tmp") / f"mha-slurm-{os.getpid()}-{time.monotonic_ns()}")
    try:
        yield cluster.start()
    finally:
        cluster.stop()
        shutil.rmtree(cluster.folder, ignore_errors=True)


def test_slurm_array_on_a_real_scheduler(workspace, slurm):
    """The shipped scripts as an instructor submits them: sbatch the array, sbatch the merge after it."""
    shared = new_machine(workspace, "slurm-cluster")
    environment = slurm.environment(workspace["env"])
    submitted = subprocess.run(["sbatch", "--parsable", str(EXAMPLES / "slurm-grade.sbatch")], cwd=shared,
                               env=environment, capture_output=True, text=True, timeout=60)
    assert submitted.returncode == 0, submitted.stderr + slurm.logs()
    job = submitted.stdout.strip().split(";")[0]
    merged = subprocess.run(["sbatch", "--wait", f"--dependency=afterok:{job}", str(EXAMPLES / "slurm-merge.sbatch")],
                            cwd=shared, env=environment, capture_output=True, text=True, timeout=1200)
    logs = "\n".join(path.read_text(errors="replace")[-1500:] for path in sorted(shared.glob("mha-*.log")))
    assert merged.returncode == 0, merged.stderr + logs + slurm.logs()
    assert sorted(path.name for path in shared.glob("mha-grade-*.log")) == [f"mha-grade-{n}.log" for n in range(1, 5)]
    assert_same_as_one_run(shared / "graded", workspace["full"])


def test_kubernetes_indexed_job(workspace):
    job = yaml.safe_load((EXAMPLES / "kubernetes-job.yaml").read_text(encoding="utf-8"))
    merge = yaml.safe_load((EXAMPLES / "kubernetes-merge.yaml").read_text(encoding="utf-8"))
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["parallelism"] == spec["completions"]
    container = spec["template"]["spec"]["containers"][0]
    values = {item["name"]: item.get("value") for item in container["env"]}
    assert values["SHARDS"] == str(spec["completions"]), "SHARDS must equal completions"
    volume = new_machine(workspace, "kubernetes")  # the persistent volume mounted at workingDir
    pods = []
    for index in range(spec["completions"]):
        env = dict(workspace["env"], JOB_COMPLETION_INDEX=str(index), SHARDS=values["SHARDS"])
        pods.append(([*container["command"], *container["args"]], env, volume))
    seconds = run_at_once(pods)
    merger = merge["spec"]["template"]["spec"]["containers"][0]
    subprocess.run([*merger["command"], *merger["args"]], env=workspace["env"], cwd=volume, check=True,
                   capture_output=True)
    assert_same_as_one_run(volume / "graded", workspace["full"])
    print(f"\nKubernetes Indexed Job: {spec['completions']} pods at once {seconds:.1f} s; "
          f"one run {workspace['full_seconds']:.1f} s")


def expand(text: str, context: dict[str, str]) -> str:
    """GitHub Actions' ``${{ name }}`` expressions, replaced from ``context`` (an unknown one is an error)."""
    def value(match: re.Match) -> str:
        return context[match.group(1).strip()]

    return re.sub(r"\$\{\{([^}]*)\}\}", value, text)
