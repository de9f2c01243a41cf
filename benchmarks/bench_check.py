"""How long `mha check` takes, against the floor of a Python process that only imports NumPy.

All run as whole processes, side by side in one run (round-robin, so load on
a shared machine falls on every command alike), on the public checks:

    python benchmarks/bench_check.py [--repeat 7] [--pytest]

Commands, each timed ``--repeat`` times (the median counts):

- the floor: ``python -c "import numpy"``;
- ``mha check`` on the reference (correct code) and on the reference with one
  catalogued mistake (``attention-no-scale``: every check that depends on the
  scale fails, with its diagnosis);
- the same two with ``--function`` (``softmax`` on correct code,
  ``scaled_dot_product_attention`` on the mistake);
- with ``--portable``, correct code and one mistake with ``--isolation
  portable`` too (a fresh interpreter per worker, as on Windows and macOS);
- with ``--pytest``, plain pytest on the same public suite files, the
  submission imported into pytest's own process (``--mha-unsandboxed``).

``--no-reference`` times all of it as in the student release: no reference,
so no calibration (fixed limits).

Each ``mha check`` is run once before timing, so that what a student meets
from the second check of an evening on is measured (a first check on a
machine may fill caches); ``--cold`` also times one run with the cache
folder emptied before it. The cache folder is a temporary one (``XDG_CACHE_HOME``),
so the benchmark neither reads nor leaves the user's own; bytecode is written
(``PYTHONDONTWRITEBYTECODE`` is dropped), as for an installed package. Goals (issue 24):
correct code at most 2x the floor, one mistake at most 2.5x, the same with
``--function``.
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
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
PUBLIC = PROJECT / "grader" / "assignments" / "multihead_attention" / "public"
MISTAKE = ("/ np.sqrt(d_k)", "")  # attention-no-scale, as in generated_class.MISTAKES
GOALS = {"correct": 2.0, "mistake": 2.5, "correct --function": 2.0, "mistake --function": 2.5,
         "correct --isolation portable": 2.0, "mistake --isolation portable": 2.5}


def wall_time(command: list[str], expect: int, env: dict) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def commands(folder: Path, with_pytest: bool, portable: bool = False) -> dict[str, tuple[list[str], int]]:
    """name -> (command, expected exit status)."""
    reference_text = REFERENCE.read_text(encoding="utf-8")
    if MISTAKE[0] not in reference_text:
        raise SystemExit("the reference no longer contains the text the benchmark's mistake replaces")
    buggy = folder / "multihead_attention.py"
    buggy.write_text(reference_text.replace(*MISTAKE, 1), encoding="utf-8")
    check = [sys.executable, "-m", "grader.cli", "check"]
    chosen = {
        "floor": ([sys.executable, "-c", "import numpy"], 0),
        "correct": ([*check, str(REFERENCE)], 0),
        "mistake": ([*check, str(buggy)], 1),
        "correct --function": ([*check, str(REFERENCE), "--function", "softmax"], 0),
        "mistake --function": ([*check, str(buggy), "--function", "scaled_dot_product_attention"], 1),
    }
    if portable:
        chosen["correct --isolation portable"] = ([*check, str(REFERENCE), "--isolation", "portable"], 0)
        chosen["mistake --isolation portable"] = ([*check, str(buggy), "--isolation", "portable"], 1)
    if with_pytest:
        chosen["plain pytest"] = ([sys.executable, "-m", "pytest", str(PUBLIC), "-q", "-p", "no:cacheprovider",
                                   "--submission", str(REFERENCE), "--mha-unsandboxed"], 0)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--pytest", action="store_true", help="also time plain pytest on the public suites")
    parser.add_argument("--cold", action="store_true", help="also time one check with the cache folder emptied")
    parser.add_argument("--portable", action="store_true", help="also time the checks with the portable worker")
    parser.add_argument("--no-reference", action="store_true", help="as in the student release: no reference")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mha-bench-check-") as scratch:
        folder = Path(scratch)
        cache = folder / "cache"
        env = {**os.environ, "XDG_CACHE_HOME": str(cache), "NO_COLOR": "1"}
        # an installed package has its bytecode compiled (pip does it at install; NumPy's, the floor's, is):
        # a shell that forbids writing it would have every run compile the grader afresh
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if options.no_reference:
            env["MHA_SOLUTIONS"] = str(folder / "no-solutions-here")
        chosen = commands(folder, options.pytest, options.portable)
        cold = None
        if options.cold:
            shutil.rmtree(cache, ignore_errors=True)
            cold = wall_time(*chosen["correct"], env)
        for command, expect in chosen.values():  # warm the file cache (and any cache of the check's own)
            wall_time(command, expect, env)
        times: dict[str, list[float]] = {name: [] for name in chosen}
        for _ in range(options.repeat):
            for name, (command, expect) in chosen.items():
                times[name].append(wall_time(command, expect, env))
    medians = {name: statistics.median(spent) for name, spent in times.items()}
    floor = medians["floor"]
    print(f"medians of {options.repeat}, whole processes, side by side in one run")
    label = 'python -c "import numpy" (floor)'
    print(f"  {label:<42} {floor:.3f} s")
    figures = {"repeat": options.repeat, "floor": floor, "medians": medians, "ratios": {}}
    for name, median in medians.items():
        if name == "floor":
            continue
        ratio = median / floor
        figures["ratios"][name] = ratio
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"  (goal <= {goal:g}x: {'met' if ratio <= goal else 'MISSED'})"
        print(f"  {'mha check ' + name if name in GOALS else name:<42} {median:.3f} s  {ratio:5.2f}x floor{verdict}")
    if cold is not None:
        figures["cold"] = cold
        print(f"  {'mha check correct, cache emptied (once)':<42} {cold:.3f} s  {cold / floor:5.2f}x floor")
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
