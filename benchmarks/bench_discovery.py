"""Discovery of a class with and without one student's folder of many files (the entry-count cap).

    python benchmarks/bench_discovery.py                # 200 students, one crowded folder of 150,000 files
    python benchmarks/bench_discovery.py --files 20000

Both discoveries run in this process, several times each, on the same class
(the crowded folder is added, then removed for the baseline): the figure is
the ratio of their best times, which a loaded machine moves little. Without
the cap, the crowded class costs the folder's full size; with it, the
folder's share is ``MAX_FOLDER_ENTRIES`` entries and that student gets an error.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from grader.batch.discovery import discover_submissions  # noqa: E402
from grader.entries.entry import MAX_FOLDER_ENTRIES  # noqa: E402


def best_of(runs: int, action) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--files", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-cap", action="store_true", help="lift the cap, to see what the folder costs without it")
    options = parser.parse_args()
    if options.no_cap:
        import grader.entries.entry as entry

        entry.MAX_FOLDER_ENTRIES = 10 ** 9
    reference = (PROJECT / "solutions" / "multihead_attention.py").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="mha-bench-discovery-") as folder:
        submissions = Path(folder) / "class"
        for index in range(options.students):
            student = submissions / f"s{index:04d}" / "exercises"
            student.mkdir(parents=True)
            (student / "multihead_attention.py").write_text(reference, encoding="utf-8")

        def discover():
            return discover_submissions(submissions, assignment="multihead_attention")

        baseline = best_of(options.runs, discover)
        crowded = submissions / "crowded"
        crowded.mkdir()
        for index in range(options.files):
            (crowded / f"f{index:06d}").touch()
        with_crowd = best_of(options.runs, discover)
        found = {entry.student: entry for entry in discover()[0]}
        refusal = found["crowded"].refusal.render("en") if found["crowded"].refusal else "graded"
        shutil.rmtree(crowded)
    print(f"discovery of {options.students} students: {baseline * 1000:.1f} ms; with one folder of "
          f"{options.files:,} files: {with_crowd * 1000:.1f} ms ({with_crowd / baseline:.2f}x; cap "
          f"{'none' if options.no_cap else f'{MAX_FOLDER_ENTRIES:,} entries'})")
    print(f"the crowded student: {refusal}")


if __name__ == "__main__":
    main()
