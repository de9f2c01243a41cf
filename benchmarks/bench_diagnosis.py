"""The trusted side's cost of naming a mistake, against grading correct code, side by side in one run.

    python benchmarks/bench_diagnosis.py [--rounds 3]

Every template of the generated class (``generated_class.templates``: correct
code in six styles, the reference with one catalogued mistake; the syntax
error left out) is graded in this process on all checks
(``in_process.grade_in_process``: the cases drawn for each student, the
twins, the signature fits, the results), a fresh student (so a fresh seed)
each round, round-robin. Prints the median and the mean per submission of
correct and of buggy code and their ratios (goal, issue 24: naming a mistake
at most 2x the cost of grading correct code).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generated_class import templates  # noqa: E402
from in_process import grade_in_process  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    spent: dict[str, list[float]] = {"correct": [], "buggy": []}
    with tempfile.TemporaryDirectory(prefix="mha-bench-diagnosis-") as folder:
        paths = []
        for index, (kind, source) in enumerate(templates()):
            if kind == "buggy:syntax-error":
                continue
            path = Path(folder) / f"template_{index:02d}.py"
            path.write_text(source, encoding="utf-8")
            paths.append((kind.split(":")[0], path))
        grade_in_process(paths[0][1], student="warm-up")  # imports, the reference's copies for the twins
        for round_ in range(rounds):
            for kind, path in paths:
                started = time.perf_counter()
                grade_in_process(path, student=f"round{round_}_{path.stem}")
                spent[kind].append(time.perf_counter() - started)
    medians = {kind: statistics.median(times) for kind, times in spent.items()}
    means = {kind: statistics.mean(times) for kind, times in spent.items()}
    for kind in spent:
        print(f"{kind:>8}: median {1000 * medians[kind]:6.1f} ms, mean {1000 * means[kind]:6.1f} ms "
              f"over {len(spent[kind])}")
    print(f"buggy / correct: {medians['buggy'] / medians['correct']:.2f}x of medians, "
          f"{means['buggy'] / means['correct']:.2f}x of means (goal <= 2x)")


if __name__ == "__main__":
    main()
