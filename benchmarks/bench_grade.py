"""Benchmark `mha grade` against nbgrader autograde and against the same checks run unsandboxed.

    python benchmarks/bench_grade.py                 # N=200, nbgrader on a subset of 12, memory at 100 and 1000
    python benchmarks/bench_grade.py --n 50 --scale none --nbgrader-subset 6 --nbgrader-hangs 0   # a quick look

Figures, all on this machine and in this run:

- `mha grade` (the installed command, all checks public + hidden, default
  --jobs and with --jobs 1): submissions per second and seconds per submission
  over the grading phase (from the first to the last progress line), and end
  to end including the class outputs; peak memory of the grader and every
  process under it (PSS summed over the process tree, sampled every 50 ms).
- `nbgrader autograde` on the same submissions as notebooks, with equivalent
  autograded test cells, over a subset: the cost per submission is the
  difference between a run over the subset and a run over 2 submissions
  (each run twice, in courses of their own, and the shorter kept), divided
  by the difference in count (nbgrader's start-up left out, in its favour);
  printed with the extrapolation to N.
- the same suites run unsandboxed in this one process (each submission
  imported, the checks calling it directly): the floor the sandbox is compared
  to. ``mha grade --jobs 1`` and the floor are run in turn, ``--overhead-rounds``
  times (default 3), so both see the same load on a shared machine; the
  overhead is the ratio of their medians, with each round's own ratio (the
  spread) and the ratio of CPU (every process under the grader against this
  process's own) beside it.
- a realistic class: the same N plus 5% more submissions that each hang in
  one function (the five in turn), graded by `mha grade` in the same run; the
  cost per hanging submission is the extra CPU the run used (sampled from
  /proc over every process under the grader) and the extra time a lane spent
  on it, per hanging submission. nbgrader autogrades 5 of them (one per
  function, its own 30 s cell timeout as its users leave it) beside 2 clean
  ones; its cost per hanging notebook, with its clean cost, extrapolates it to
  the realistic class.
- a class where 80% of the submissions carry one or two catalogued mistakes
  (``--mistaken-share``), graded by `mha grade` in the same run: naming
  mistakes is the trusted side's dearest work; against nbgrader's cost per
  notebook extrapolated to it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generated_class import REFERENCE, write_class, write_mistaken_class, write_realistic_class  # noqa: E402

KEY = "benchmark-course-key"


class TreeSampler(threading.Thread):
    """Peak memory of a process and all its descendants, read from /proc every ``interval`` seconds."""

    def __init__(self, root: int, interval: float = 0.05):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_pss = self.peak_rss = self.peak_root_rss = 0
        self.peak_processes = 0
        self.cpu_ticks: dict[tuple[int, int], int] = {}  # (pid, start time) -> user + system ticks, last seen
        self.stopped = threading.Event()

    @property
    def cpu_seconds(self) -> float:
        """CPU time of every process seen under the root (each one's last sample: a short-lived one loses
        at most one interval's worth)."""
        return sum(self.cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        while not self.stopped.is_set():
            tree = descendants(self.root)
            pss = rss = 0
            for pid in tree:
                pss += _field_kb(f"/proc/{pid}/smaps_rollup", "Pss:")
                rss += _field_kb(f"/proc/{pid}/status", "VmRSS:")
                ticks = _cpu_ticks(pid)
                if ticks is not None:
                    self.cpu_ticks[ticks[0]] = ticks[1]
            self.peak_pss, self.peak_rss = max(self.peak_pss, pss), max(self.peak_rss, rss)
            self.peak_root_rss = max(self.peak_root_rss, _field_kb(f"/proc/{self.root}/status", "VmHWM:"))
            self.peak_processes = max(self.peak_processes, len(tree))
            self.stopped.wait(self.interval)

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def _cpu_ticks(pid: int) -> tuple[tuple[int, int], int] | None:
    """((pid, start time), user + system clock ticks) of a process, from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (pid, int(fields[19])), int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def _field_kb(path: str, name: str) -> int:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith(name):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


# the processes whose trees TreeCpu counts apart, by what their command line holds: the sandbox's fork server
# (its keepers and workers are forked from it) and the fork server the grading processes come from
PARTS = {"sandbox": "sandbox/worker/forkserver.py", "lanes": "multiprocessing.forkserver import main"}


class TreeCpu:
    """Exact CPU of a command and every process under it, where a cgroup v1 ``cpuacct`` can be made (root):
    the command starts in a cgroup of its own there, which everything it starts stays in (the sandbox makes
    its workers' cgroups in other hierarchies), and ``cpuacct.usage`` counts them all, the short-lived too.

    Its parts (``PARTS``) are counted apart too: a thread moves each into a child cgroup as soon as it
    appears (every 2 ms, until all are found), and whatever it forks from then on is counted with it; the
    rest (the command's own process) is what the parts leave of the whole. A process a part forked in the
    first milliseconds, before the move, stays in the rest."""

    def __init__(self):
        self.folder = None
        self.parts: dict[str, str] = {}
        self.stopped = threading.Event()
        try:
            with open("/proc/self/cgroup") as listing:
                own = next(path for _, names, path in (line.rstrip("\n").split(":", 2) for line in listing)
                           if "cpuacct" in names.split(","))
            with open("/proc/self/mountinfo") as listing:
                point = next(line.split()[4] for line in listing
                             if " - cgroup " in line and "cpuacct" in line.rstrip().rsplit(" ", 1)[-1].split(","))
            folder = os.path.join(point, own.lstrip("/"), f"mha-bench-{os.getpid()}-{time.monotonic_ns()}")
            os.mkdir(folder)
            self.folder = folder
            for name in PARTS:
                os.mkdir(os.path.join(folder, name))
                self.parts[name] = os.path.join(folder, name)
        except (OSError, StopIteration, IndexError):
            pass
        self.mover = threading.Thread(target=self._move_parts, daemon=True)

    def join(self) -> None:
        """In the command's process, before it runs (``preexec_fn``)."""
        if self.folder is not None:
            with open(os.path.join(self.folder, "cgroup.procs"), "w") as procs:
                procs.write(str(os.getpid()))

    def start(self) -> None:
        if self.parts:
            self.mover.start()

    def _move_parts(self) -> None:
        left = dict(PARTS)
        while left and not self.stopped.wait(0.002):
            try:
                with open(os.path.join(self.folder, "cgroup.procs")) as procs:
                    pids = procs.read().split()
            except OSError:
                return
            for pid in pids:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as handle:
                        command = handle.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                name = next((name for name, mark in left.items() if mark in command), None)
                if name is not None:
                    try:
                        with open(os.path.join(self.parts[name], "cgroup.procs"), "w") as procs:
                            procs.write(pid)
                        del left[name]
                    except OSError:
                        pass

    def seconds(self, part: str | None = None) -> float | None:
        try:
            with open(os.path.join(self.parts[part] if part else self.folder, "cpuacct.usage")) as usage:
                return int(usage.read()) / 1e9
        except (OSError, TypeError, ValueError, KeyError):
            return None

    def split(self) -> dict[str, float]:
        """CPU seconds so far of each part and of the rest (``grader``: the command's own process)."""
        whole = self.seconds()
        if whole is None or not self.parts:
            return {}
        parts = {name: self.seconds(name) or 0.0 for name in self.parts}
        return {"grader": whole - sum(parts.values()), **parts}

    def remove(self) -> None:
        self.stopped.set()
        if self.mover.is_alive():
            self.mover.join()
        for folder in [*self.parts.values(), self.folder]:
            for _ in range(100):
                try:
                    if folder is not None:
                        os.rmdir(folder)
                    break
                except OSError:
                    time.sleep(0.05)


def mha_command() -> list[str]:
    installed = shutil.which("mha")
    return [installed] if installed else [sys.executable, "-c", "from grader.cli import main; main()"]


def run_mha(folder: Path, out: Path, *, jobs: int | None) -> dict:
    """Run `mha grade` on ``folder``; time it from its progress lines and sample its memory."""
    command = mha_command() + ["grade", str(folder), "--out", str(out)] + (["--jobs", str(jobs)] if jobs else [])
    environment = dict(os.environ, MHA_COURSE_KEY=KEY)
    started = time.perf_counter()
    accounted = TreeCpu()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
                               preexec_fn=accounted.join)
    accounted.start()
    sampler = TreeSampler(process.pid)
    sampler.start()
    first = last = None
    cpu_first = cpu_last = 0.0
    split_first = split_last = {}
    for line in process.stdout:
        now = time.perf_counter()
        if line.startswith("grading "):
            first, cpu_first, split_first = now, accounted.seconds() or sampler.cpu_seconds, accounted.split()
        elif line.startswith("["):
            last, cpu_last, split_last = now, accounted.seconds() or sampler.cpu_seconds, accounted.split()
    process.wait()
    finished = time.perf_counter()
    sampler.stop()
    accounted.remove()
    if process.returncode != 0:
        raise RuntimeError(f"mha grade failed: {process.stderr.read()[-2000:]}")
    count = len(list(folder.glob("*.py")))
    results = json.loads((out / "results.json").read_text())
    return {"count": count, "grading": last - first, "total": finished - started, "cpu": sampler.cpu_seconds,
            # every process under it, from the first to the last progress line (exact where a cpuacct cgroup
            # could be made; else sampled every 50 ms, which misses part of each short-lived worker)
            "grading_cpu": cpu_last - cpu_first, "cpu_exact": accounted.folder is not None,
            # the grading phase's CPU by part: the grader's own process, the grading processes, the sandbox
            "grading_cpu_split": {name: split_last[name] - split_first.get(name, 0.0) for name in split_last},
            "peak_pss_mb": sampler.peak_pss / 1024, "peak_rss_mb": sampler.peak_rss / 1024,
            "grader_peak_rss_mb": sampler.peak_root_rss / 1024, "processes": sampler.peak_processes,
            "scores": {r["student"]: r["score"] for r in results},
            "durations": {r["student"]: r.get("duration", 0.0) for r in results},
            "isolation": next((r["isolation"] for r in results if r.get("isolation")), "")}


NBGRADER_ROUNDS = 2


def run_nbgrader(work: Path, submissions: list[Path], subset: int) -> dict:
    from nbgrader_course import autograde_scores, build_course, time_autograde

    # Each size twice, in turn, each time in a course of its own, and the shorter time of each: a start-up that
    # happens to be slow (seconds, now and then) would otherwise make the difference of the two say nothing.
    smalls, larges = [], []
    for round_ in range(NBGRADER_ROUNDS):
        smalls.append(time_autograde(build_course(work / f"nbgrader-2-{round_}", submissions[:2], REFERENCE)))
        large = build_course(work / f"nbgrader-{subset}-{round_}", submissions[:subset], REFERENCE)
        larges.append(time_autograde(large))
    time_small, time_large = min(smalls), min(larges)
    per_submission = (time_large - time_small) / (subset - 2)
    scores = autograde_scores(large)
    return {"subset": subset, "time_2": time_small, "time_subset": time_large, "per_submission": per_submission,
            "graded": len(scores), "times_2": smalls, "times_subset": larges}


def run_nbgrader_hangs(work: Path, clean: list[Path], hanging: list[Path], time_clean: float) -> dict:
    """nbgrader on the same 2 clean submissions plus one hanging in each function: the cost per hanging one."""
    from nbgrader_course import build_course, time_autograde

    course = build_course(work / "nbgrader-hangs", clean[:2] + hanging, REFERENCE)
    elapsed = time_autograde(course)
    return {"hanging": len(hanging), "time": elapsed, "per_hanging": (elapsed - time_clean) / len(hanging)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="submissions in the main comparison (default 200)")
    parser.add_argument("--nbgrader-subset", type=int, default=12,
                        help="submissions nbgrader autogrades (default 12; 0 skips nbgrader)")
    parser.add_argument("--nbgrader-hangs", type=int, default=5,
                        help="hanging submissions nbgrader autogrades, one per function in turn (default 5; 0 skips)")
    parser.add_argument("--hang-share", type=float, default=0.05,
                        help="share of the realistic class that hangs in one function (default 0.05)")
    parser.add_argument("--mistaken-share", type=float, default=0.8,
                        help="share of the third class that carries one or two mistakes (default 0.8; 0 skips it)")
    parser.add_argument("--scale", default="100,1000", help="class sizes for the memory comparison, or 'none'")
    parser.add_argument("--overhead-rounds", type=int, default=3,
                        help="rounds of `mha grade --jobs 1` and the unsandboxed floor in turn (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args()
    os.environ["MHA_COURSE_KEY"] = KEY
    work = Path(tempfile.mkdtemp(prefix="mha-bench-"))
    figures: dict = {"n": options.n, "cores": len(os.sched_getaffinity(0))}
    try:
        folder = work / "class"
        kinds = write_class(folder, options.n)
        correct = sum(kind.startswith("correct") for _, kind in kinds)
        print(f"{options.n} generated submissions ({correct} correct, {options.n - correct} with a mistake or a "
              f"syntax error), {figures['cores']} cores\n")

        realistic_folder = work / "realistic"
        realistic_kinds = write_realistic_class(realistic_folder, options.n, share=options.hang_share)
        hangs = sorted(student for student, kind in realistic_kinds if kind.startswith("hang:"))

        mistaken_folder = work / "mistaken"
        mistaken_kinds = write_mistaken_class(mistaken_folder, options.n, share=options.mistaken_share) \
            if options.mistaken_share > 0 else []

        parallel = run_mha(folder, work / "out-parallel", jobs=None)
        realistic = run_mha(realistic_folder, work / "out-realistic", jobs=None)
        mistaken = run_mha(mistaken_folder, work / "out-mistaken", jobs=None) if mistaken_kinds else None
        from in_process import grade_folder_in_process

        rounds = []  # (mha grade --jobs 1, the floor's seconds, the floor's CPU seconds, its scores), in turn
        for round_number in range(max(1, options.overhead_rounds)):
            serial = run_mha(folder, work / f"out-serial-{round_number}", jobs=1)
            cpu_before = time.process_time()
            unsandboxed_time, unsandboxed_scores = grade_folder_in_process(folder)
            rounds.append((serial, unsandboxed_time, time.process_time() - cpu_before, unsandboxed_scores))
        serial = sorted(rounds, key=lambda entry: entry[0]["grading"])[len(rounds) // 2][0]
        figures["mha"], figures["mha_jobs_1"] = _strip(parallel), _strip(serial)
        figures["mha_realistic"] = _strip(realistic)
        print(f"mha grade (default --jobs = {figures['cores']}): {_rate(parallel)}")
        print(f"mha grade --jobs 1:                  {_rate(serial)}")
        print(f"  isolation: {parallel['isolation']}")
        hang_cost = _hang_cost(parallel, realistic, hangs)
        figures["hang_cost"] = hang_cost
        print(f"realistic class, {len(realistic_kinds)} with {len(hangs)} hanging ({100 * options.hang_share:g}%): "
              f"{_rate(realistic)}")
        print(f"  per hanging submission: {hang_cost['cpu']:.2f} s of CPU beyond the clean class's "
              f"(goal <= 1.5 s of one core), {hang_cost['lane']:.2f} s of a lane's time (an ordinary one: "
              f"{hang_cost['ordinary']:.3f} s)")

        if mistaken is not None:
            figures["mha_mistaken"] = _strip(mistaken)
            wrong = sum(kind.startswith("buggy") for _, kind in mistaken_kinds)
            print(f"class with {wrong} of {len(mistaken_kinds)} carrying one or two mistakes: {_rate(mistaken)}")

        unsandboxed_time = statistics.median(entry[1] for entry in rounds)
        unsandboxed_scores = rounds[-1][3]
        figures["unsandboxed"] = {"total": unsandboxed_time, "per_submission": unsandboxed_time / options.n}
        same = sum(unsandboxed_scores[s] == parallel["scores"].get(s) for s in unsandboxed_scores)
        print(f"unsandboxed, one process:            {options.n / unsandboxed_time:6.1f} submissions/s, "
              f"{1000 * unsandboxed_time / options.n:6.1f} ms/submission "
              f"(same score as mha grade for {same}/{options.n})")
        overhead_serial = serial["grading"] / unsandboxed_time
        overhead_parallel = parallel["grading"] / unsandboxed_time
        each = [entry[0]["grading"] / entry[1] for entry in rounds]
        # CPU: every process under `mha grade --jobs 1` over its grading phase (sampled every 50 ms) against
        # the floor's own process over the same grading
        cpu = statistics.median(entry[0]["grading_cpu"] / entry[2] for entry in rounds)
        figures["sandbox_overhead"] = {"jobs_1": overhead_serial, "default_jobs": overhead_parallel,
                                       "jobs_1_each_round": each, "jobs_1_cpu": cpu,
                                       "rounds": [{"mha_jobs_1": entry[0]["grading"], "unsandboxed": entry[1],
                                                   "mha_jobs_1_cpu": entry[0]["grading_cpu"],
                                                   "unsandboxed_cpu": entry[2]}
                                                  for entry in rounds]}
        print(f"  sandbox overhead: {overhead_serial:.2f}x the unsandboxed cost at --jobs 1 (goal <= 2x; medians of "
              f"{len(rounds)} rounds in turn, each round {', '.join(f'{ratio:.2f}x' for ratio in each)}; "
              f"CPU {cpu:.2f}x); {overhead_parallel:.2f}x with all cores against the one-process floor\n")

        if options.nbgrader_subset >= 3:
            nbgrader = run_nbgrader(work, sorted(folder.glob("*.py")), min(options.nbgrader_subset, options.n))
            figures["nbgrader"] = nbgrader
            per = nbgrader["per_submission"]
            print(f"nbgrader autograde: {nbgrader['time_subset']:.1f} s for {nbgrader['subset']} submissions, "
                  f"{nbgrader['time_2']:.1f} s for 2 (the shorter of {NBGRADER_ROUNDS} runs each: "
                  f"{', '.join(f'{t:.1f}' for t in nbgrader['times_subset'])} and "
                  f"{', '.join(f'{t:.1f}' for t in nbgrader['times_2'])} s) -> {per:.2f} s per submission (start-up left out), "
                  f"extrapolated to {options.n}: {per * options.n:.0f} s")
            ratio = (per * options.n) / parallel["grading"]
            figures["throughput_ratio_vs_nbgrader"] = ratio
            print(f"  mha grade throughput = {ratio:.0f}x nbgrader's (goal >= 50x); "
                  f"end to end with outputs: {(per * options.n) / parallel['total']:.0f}x\n")
            if mistaken is not None:
                # nbgrader runs every cell of every notebook whatever its mistakes: its cost per notebook is
                # the clean subset's (itself half mistakes), extrapolated to this class
                mistaken_ratio = (per * len(mistaken_kinds)) / mistaken["grading"]
                figures["mistaken_ratio_vs_nbgrader"] = mistaken_ratio
                print(f"  class with mistakes: mha grade = {mistaken_ratio:.0f}x nbgrader's (goal >= 50x)\n")
            if options.nbgrader_hangs > 0:
                chosen = [realistic_folder / f"{student}.py" for student in hangs[:options.nbgrader_hangs]]
                nb_hangs = run_nbgrader_hangs(work, sorted(folder.glob("*.py")), chosen, nbgrader["time_2"])
                figures["nbgrader_hangs"] = nb_hangs
                nb_realistic = per * options.n + nb_hangs["per_hanging"] * len(hangs)
                realistic_ratio = nb_realistic / realistic["grading"]
                figures["realistic_ratio_vs_nbgrader"] = realistic_ratio
                print(f"nbgrader autograde, {nb_hangs['hanging']} hanging notebooks beside 2 clean ones: "
                      f"{nb_hangs['time']:.1f} s -> {nb_hangs['per_hanging']:.1f} s per hanging notebook; "
                      f"the realistic class extrapolated: {nb_realistic:.0f} s "
                      f"({len(realistic_kinds) / nb_realistic:.2f} submissions/s)")
                print(f"  realistic class: mha grade {len(realistic_kinds) / realistic['grading']:.1f} submissions/s "
                      f"= {realistic_ratio:.0f}x nbgrader's (goal >= 50x); a hanging submission costs nbgrader "
                      f"{nb_hangs['per_hanging'] / max(hang_cost['lane'], 1e-9):.0f}x what it costs mha grade\n")

        sizes = [] if options.scale == "none" else [int(size) for size in options.scale.split(",")]
        memory = {}
        for size in sizes:
            scale_folder = work / f"class-{size}"
            write_class(scale_folder, size)
            run = run_mha(scale_folder, work / f"out-{size}", jobs=None)
            memory[size] = _strip(run)
            print(f"{size:>5} submissions: peak {run['peak_pss_mb']:6.1f} MB PSS over {run['processes']} processes "
                  f"(RSS sum {run['peak_rss_mb']:.0f} MB); the grader process itself {run['grader_peak_rss_mb']:.1f}"
                  f" MB; {_rate(run)}")
            shutil.rmtree(scale_folder)
        if len(sizes) == 2:
            small, large = memory[sizes[0]], memory[sizes[1]]
            figures["memory_ratio"] = large["peak_pss_mb"] / small["peak_pss_mb"]
            print(f"  memory({sizes[1]}) / memory({sizes[0]}) = {figures['memory_ratio']:.2f} (goal <= 1.2); "
                  f"grader process alone: {large['grader_peak_rss_mb'] / small['grader_peak_rss_mb']:.2f}")
        figures["memory"] = memory
        if options.json:
            options.json.write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _rate(run: dict) -> str:
    split = run.get("grading_cpu_split") or {}
    cpu = (f"\n    CPU per submission while grading: {1000 * run['grading_cpu'] / run['count']:.1f} ms ("
           + ", ".join(f"{name} {1000 * seconds / run['count']:.1f}" for name, seconds in split.items()) + ")"
           ) if split else ""
    return (f"{run['count'] / run['grading']:6.1f} submissions/s, {1000 * run['grading'] / run['count']:6.1f} "
            f"ms/submission (end to end {run['total']:.1f} s), peak {run['peak_pss_mb']:.0f} MB{cpu}")


def _strip(run: dict) -> dict:
    return {key: value for key, value in run.items() if key not in ("scores", "durations")}


def _hang_cost(clean: dict, realistic: dict, hangs: list[str]) -> dict:
    """What each hanging submission cost in all: the CPU the realistic run used beyond the clean run's (the
    same ordinary submissions), and the time a lane spent on it (its duration)."""
    durations = realistic["durations"]
    ordinary = [seconds for student, seconds in durations.items() if student not in hangs]
    count = max(1, len(hangs))
    return {"hanging": len(hangs), "cpu": (realistic["cpu"] - clean["cpu"]) / count,
            "lane": sum(durations[student] for student in hangs) / count,
            "ordinary": sum(ordinary) / max(1, len(ordinary))}


if __name__ == "__main__":
    main()
