"""Where the fixed cost of a confined worker goes, against the same checks run unsandboxed, in one run.

    python benchmarks/bench_worker.py              # 60 rounds, about 15 s
    python benchmarks/bench_worker.py --rounds 20 --cli 0
    python benchmarks/bench_worker.py --json figures.json

Each round grades the reference once unsandboxed (``in_process.py``: the same
suites, cases and diagnosis, the submission imported into this process) and
once through a shared fork server (``grade_submission``, every check public
and hidden), alternately, so that both see the same load on the machine; the
ratio of the two medians is the sandbox's cost. Two sandboxed rounds each
time: through a default server (its keepers and workers made ahead of the
requests, and each grading process asking for its next worker while it
grades), through one that makes each worker on request (``without=
("spares",)``) and through one whose workers, made ahead, do not rehearse
calls before their request (``without=("rehearsal",)``). They are timed from the inside too: the worker's own marks
(the keeper's fork, its namespaces, scratch tmpfs and cgroups, the worker's
fork, joining its cgroups, Landlock, the uid change, the request, its
hello), the load, every exchange of calls and the close, each as a median
over the rounds; what is left is the trusted side's own work (cases,
comparisons, results), which the floor does too. As root it also times each
namespace alone.

With ``--cli N`` (default 40) it also runs ``mha grade --jobs 1`` over N and
over 4 copies of the reference and gives the marginal cost per submission
(the difference over N - 4: start-up left out), against the floor.
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
import time
from collections import defaultdict
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
PROJECT = BENCHMARKS.parent
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
KEY = "benchmark-course-key"


class Stopwatch:
    """Times the sandbox's own steps from outside, by wrapping its methods (nothing is re-implemented)."""

    def __init__(self):
        self.spans: dict[str, list[float]] = defaultdict(list)
        self.phases: list[tuple] = []
        self.endings: list[tuple] = []
        self._originals = []

    def __enter__(self) -> Stopwatch:
        from grader.sandbox.client import Sandbox
        from grader.sandbox.link import WorkerLink

        self._wrap(Sandbox, "_start", "start")
        self._wrap(Sandbox, "_exchange", "call exchanges")  # one call
        self._wrap(Sandbox, "call_batch", "call exchanges")  # a streamed batch (prefetching)
        self._wrap(Sandbox, "close", "close (the keeper asked to end the worker)")
        self._wrap(WorkerLink, "finish", "")  # the end, read later: not part of the submission's time
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, original in self._originals:
            setattr(owner, name, original)

    def _wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)
        spans, phases, endings = self.spans, self.phases, self.endings

        def timed(box, *args, **kwargs):
            before = getattr(_timings(box), "worker_seconds", 0.0)
            started = time.perf_counter()
            try:
                return original(box, *args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                if name == "_start":  # split by the worker's own marks: up to its hello, then the load
                    marks = dict(getattr(_timings(box), "phases", ()))
                    hello = min(max(marks.get("hello", spent), 0.0), spent)
                    spans["worker start, up to its hello"].append(hello)
                    spans["load (the submission's top level)"].append(spent - hello)
                    phases.append(getattr(_timings(box), "phases", ()))
                elif name == "_exchange" and args[0].get("op") == "load":
                    pass  # an older sandbox loads through an exchange, inside _start: counted there
                elif name in ("_exchange", "call_batch"):
                    spans[label].append(spent)
                    inside = getattr(_timings(box), "worker_seconds", 0.0) - before
                    spans["  of which the worker's own work (decode, run, encode)"].append(inside)
                    spans["  of which the trip (pipes, waking each side)"].append(spent - inside)
                elif name == "finish":  # box: the worker's link; its keeper's marks, from its kill request on
                    marks = list(getattr(box, "ending", ()))
                    if marks:
                        asked = marks[0][1]
                        endings.append([(step, at - asked) for step, at in marks + [("reported", time.monotonic())]])
                else:
                    spans[label].append(spent)
                if name == "call_batch":
                    spans["calls"].append(len(args[0]))
                elif name == "_exchange" and args[0].get("op") != "load":
                    spans["calls"].append(1)

        self._originals.append((owner, name, original))
        setattr(owner, name, timed)

    def reset(self) -> None:
        self.spans.clear()
        self.phases.clear()
        self.endings.clear()


def _timings(box):
    """Where a box keeps its step timings: its ``SandboxTimings`` (an older sandbox: the box itself)."""
    return getattr(box, "timings", box)


def step_costs(phases: list[tuple]) -> dict[str, float]:
    """Median seconds of each step of starting a worker, from consecutive marks (negative: before the request)."""
    steps: dict[str, list[float]] = defaultdict(list)
    for marks in phases:
        ordered = sorted(marks, key=lambda mark: mark[1])
        previous = min(0.0, ordered[0][1]) if ordered else 0.0
        for name, at in ordered:
            steps[name].append(at - previous)
            previous = at
    return {name: statistics.median(values) for name, values in steps.items()}


def in_one_process(rounds: int) -> dict:
    """Alternating rounds: unsandboxed, through a server with a spare worker (the default), through one without."""
    sys.path.insert(0, str(BENCHMARKS))
    from in_process import grade_in_process

    from grader.grading.grade import grade_submission
    from grader.sandbox.client import start_server

    servers = {"warm": start_server(), "cold": start_server(without=("spares",)),  # cold: nothing made ahead
               "unrehearsed": start_server(without=("rehearsal",))}  # made ahead, no rehearsal before the request
    floor, times = [], defaultdict(list)
    spans = {kind: defaultdict(list) for kind in servers}
    phases: dict[str, list] = {kind: [] for kind in servers}
    endings: dict[str, list] = {kind: [] for kind in servers}
    isolation = ""
    try:
        with Stopwatch() as watch:
            for warm in range(3):  # first calls load parts of NumPy and the suites
                grade_in_process(REFERENCE, student=f"warm{warm}")
                for server in servers.values():
                    grade_submission(path=REFERENCE, visibility="all", server=server, student=f"warm{warm}")
            for number in range(rounds):
                student = f"student{number}"
                started = time.perf_counter()
                unsandboxed = grade_in_process(REFERENCE, student=student)
                floor.append(time.perf_counter() - started)
                for kind, server in servers.items():
                    watch.reset()
                    started = time.perf_counter()
                    result = grade_submission(path=REFERENCE, visibility="all", server=server, student=student)
                    times[kind].append(time.perf_counter() - started)
                    for label, values in watch.spans.items():
                        spans[kind][label].append(sum(values))
                    phases[kind] += watch.phases
                    endings[kind] += watch.endings
                    assert result.score == unsandboxed.score == result.max_score, (result.score, unsandboxed.score)
                    isolation = result.isolation
    finally:
        for server in servers.values():
            server.stop()
    figures = {"rounds": rounds, "floor": statistics.median(floor), "isolation": isolation}
    for kind in servers:
        calls = spans[kind].pop("calls", [0])
        median = {label: statistics.median(values) for label, values in spans[kind].items()}
        median["trusted side (the floor's work, and the rest)"] = statistics.median(times[kind]) - sum(
            seconds for label, seconds in median.items() if not label.startswith(" "))
        figures[kind] = {"sandboxed": statistics.median(times[kind]),
                         "ratio": statistics.median(times[kind]) / figures["floor"], "spans": median,
                         "steps": step_costs(phases[kind]), "ending": step_costs(endings[kind]),
                         "calls_per_submission": statistics.median(calls),
                         "exchanges_per_submission": len(watch.spans.get("call exchanges", ())) or None}
    return figures


def namespace_costs(rounds: int = 20) -> dict[str, float]:
    """Median seconds to unshare each namespace a keeper enters, alone and all together (root only), in
    children forked from this process (the pid namespace's cost includes forking its first process)."""
    import ctypes

    from grader.sandbox.worker.confinement import NAMESPACES

    libc = ctypes.CDLL(None, use_errno=True)
    kinds = [(name, flag) for name, flag in NAMESPACES] + [("all five", sum(flag for _, flag in NAMESPACES))]
    costs = {}
    for name, flag in kinds:
        times = []
        for _ in range(rounds):
            reader, writer = os.pipe()
            pid = os.fork()
            if pid == 0:
                started = time.perf_counter()
                failed = libc.unshare(flag)
                if not failed and flag & 0x20000000:  # CLONE_NEWPID: the namespace exists once it has a process
                    child = os.fork()
                    if child == 0:
                        os._exit(0)
                    os.waitpid(child, 0)
                os.write(writer, f"{failed} {time.perf_counter() - started}".encode())
                os._exit(0)
            os.close(writer)
            failed, seconds = os.read(reader, 64).split()
            os.close(reader)
            os.waitpid(pid, 0)
            if failed == b"0":
                times.append(float(seconds))
        if times:
            costs[name] = statistics.median(times)
    return costs


def through_the_cli(count: int) -> dict:
    """Marginal seconds per submission of ``mha grade --jobs 1`` (the runs over ``count`` and over 4 copies)."""
    sys.path.insert(0, str(BENCHMARKS))
    from in_process import grade_folder_in_process

    work = Path(tempfile.mkdtemp(prefix="mha-bench-worker-"))
    mha = shutil.which("mha")
    command = [mha] if mha else [sys.executable, "-c", "from grader.cli import main; main()"]
    try:
        walls = {}
        for size in (4, count):
            folder = work / f"class-{size}"
            folder.mkdir()
            for number in range(size):
                shutil.copy(REFERENCE, folder / f"student{number:03d}.py")
            started = time.perf_counter()
            subprocess.run(command + ["grade", str(folder), "--out", str(work / f"out-{size}"), "--jobs", "1"],
                           check=True, capture_output=True, env=dict(os.environ, MHA_COURSE_KEY=KEY))
            walls[size] = time.perf_counter() - started
        floor_time, _ = grade_folder_in_process(work / f"class-{count}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_submission = (walls[count] - walls[4]) / (count - 4)
    return {"count": count, "per_submission": per_submission, "floor": floor_time / count,
            "ratio": per_submission / (floor_time / count)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=60, help="rounds of the in-process comparison (default 60)")
    parser.add_argument("--cli", type=int, default=40, help="submissions for the mha grade --jobs 1 figure (0: skip)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args()
    os.environ["MHA_COURSE_KEY"] = KEY
    os.environ.setdefault("MHA_CONFIG_DIR", tempfile.mkdtemp(prefix="mha-bench-config-"))
    figures = {"one_process": in_one_process(options.rounds)}
    if os.geteuid() == 0:
        figures["namespaces"] = namespace_costs()
    one = figures["one_process"]
    print(f"isolation: {one['isolation']}\n")
    print(f"per submission (median of {one['rounds']} alternating rounds, reference, public + hidden checks):")
    print(f"  unsandboxed floor                    {1000 * one['floor']:7.2f} ms")
    for kind, title in (("warm", "workers made ahead (default)"), ("cold", "each made on request"),
                        ("unrehearsed", "made ahead, not rehearsed")):
        print(f"  sandboxed, {title:<24}{1000 * one[kind]['sandboxed']:7.2f} ms = {one[kind]['ratio']:.2f}x the floor")
    for kind in ("cold", "warm"):
        print(f"\n  {kind}: where the sandboxed time goes")
        for label, seconds in one[kind]["spans"].items():
            print(f"    {label:<48} {1000 * seconds:7.2f} ms")
        print(f"  {kind}: starting one worker, step by step (each mark's time after the one before; "
              "negative: made before the request)")
        for name, seconds in one[kind]["steps"].items():
            print(f"    {name:<48} {1000 * seconds:7.2f} ms")
        print(f"  {kind}: the close, step by step (after the submission, read when the next worker starts)")
        for name, seconds in one[kind]["ending"].items():
            print(f"    {name:<48} {1000 * seconds:7.2f} ms")
    if figures.get("namespaces"):
        print("\n  each namespace, unshared in a process forked from this one (pid: with its first process):")
        for name, seconds in figures["namespaces"].items():
            print(f"    {name:<48} {1000 * seconds:7.2f} ms")
    if options.cli:
        cli = figures["cli"] = through_the_cli(options.cli)
        print(f"\nmha grade --jobs 1, {cli['count']} copies of the reference: {1000 * cli['per_submission']:.2f} ms "
              f"per submission (start-up left out) against {1000 * cli['floor']:.2f} ms unsandboxed "
              f"= {cli['ratio']:.2f}x")
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
