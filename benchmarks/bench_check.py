"""How long `mha check` takes, against plain pytest with no worker.

Both run as whole processes on the reference solution, the public checks only:

    python benchmarks/bench_check.py [--repeat 10]

``mha check`` starts the CLI, a sandboxed worker, loads the submission there
and runs the suites through the fast runner. The baseline runs the same public
suite files under plain pytest, importing the submission into pytest's own
process (``--mha-unsandboxed``). The script prints the median wall time of
each and their ratio.

Then the two workers a student's check may get, in turns (so a loaded
machine slows both alike): ``mha check --isolation linux`` (the fork server)
and ``--isolation portable`` (a fresh interpreter per worker, as on Windows
and macOS), each as a multiple of ``python -c "import numpy"``, and the
portable one against the Linux one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
PUBLIC = PROJECT / "grader" / "assignments" / "multihead_attention" / "public"


def wall_time(command: list[str], expect: int, env: dict | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    repeat = parser.parse_args().repeat
    check = [sys.executable, "-m", "grader.cli", "check", str(REFERENCE), "--json"]
    baseline = [sys.executable, "-m", "pytest", str(PUBLIC), "-q", "-p", "no:cacheprovider",
                "--submission", str(REFERENCE), "--mha-unsandboxed"]
    wall_time(check, 0), wall_time(baseline, 0)  # warm the file cache
    check_times = [wall_time(check, 0) for _ in range(repeat)]
    baseline_times = [wall_time(baseline, 0) for _ in range(repeat)]
    check_median, baseline_median = statistics.median(check_times), statistics.median(baseline_times)
    print(f"mha check (CLI + sandboxed worker), median of {repeat}: {check_median:.3f} s")
    print(f"plain pytest, same public suites, in-process:   {baseline_median:.3f} s")
    print(f"ratio check / plain pytest: {check_median / baseline_median:.2f}")
    compare_isolations(repeat)
    print("without the reference, as in the student release (no calibration):")
    compare_isolations(repeat, env=dict(os.environ, MHA_SOLUTIONS=str(PROJECT / "no-solutions-here")))


def compare_isolations(repeat: int, env: dict | None = None) -> None:
    """``mha check`` with each worker, and the NumPy import, in turns; medians and ratios."""
    commands = {isolation: [sys.executable, "-m", "grader.cli", "check", str(REFERENCE), "--json", "--isolation",
                            isolation] for isolation in ("linux", "portable")}
    commands["import numpy"] = [sys.executable, "-c", "import numpy"]
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            times[name].append(wall_time(command, 0, env))
    medians = {name: statistics.median(spent) for name, spent in times.items()}
    numpy_time = medians["import numpy"]
    print(f"python -c 'import numpy', median of {repeat}: {numpy_time:.3f} s")
    for isolation in ("linux", "portable"):
        print(f"mha check --isolation {isolation:<8}: {medians[isolation]:.3f} s, "
              f"{medians[isolation] / numpy_time:.1f}x the NumPy import")
    print(f"ratio portable / linux: {medians['portable'] / medians['linux']:.2f}")


if __name__ == "__main__":
    main()
