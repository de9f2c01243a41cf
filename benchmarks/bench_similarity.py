"""How long `mha similarity` takes on a large class, against copydetect's own all-pairs detector.

    python benchmarks/bench_similarity.py [--n 1000] [--baseline-n 120] [--json figures.json]

Writes N submissions with the benchmark's class generator
(``generated_class.py``: the reference, five other correct styles, and the
reference with one catalogued mistake each, in turn) and times, in one run:

- ``mha similarity`` as installed, end to end (reading, fingerprinting, every
  pair, evidence for the 500 listed, both files written);
- the baseline: copydetect's ``CopyDetector`` (its own tokenizer, its loop over
  every pair of files, no report written) on the first ``--baseline-n``
  submissions, extrapolated to N by the number of pairs (it compares each pair
  once, so its time grows with N^2).

The ratio of the two is the figure to watch on a loaded machine; the absolute
time is the goal (minutes for 1,000 on two cores).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generated_class import PROJECT, write_class  # noqa: E402


def pairs(count: int) -> int:
    return count * (count - 1) // 2


def time_similarity(folder: Path, out: Path) -> float:
    mha = Path(sys.executable).with_name("mha")
    started = time.perf_counter()
    done = subprocess.run([str(mha), "similarity", str(folder), "--out", str(out)], capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"mha similarity exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def time_copydetect(folder: Path, boilerplate: Path) -> float:
    from copydetect import CopyDetector

    started = time.perf_counter()
    detector = CopyDetector(test_dirs=[str(folder)], boilerplate_dirs=[str(boilerplate)], extensions=["py"],
                            autoopen=False, silent=True, out_file=str(folder / "unused.html"))
    detector.run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--baseline-n", type=int, default=120)
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mha-bench-similarity-") as scratch:
        scratch = Path(scratch)
        written = write_class(scratch / "class", options.n)
        subset = scratch / "subset"
        subset.mkdir()
        for student, _ in written[:options.baseline_n]:
            shutil.copy(scratch / "class" / f"{student}.py", subset / f"{student}.py")
        boilerplate = scratch / "stub"
        boilerplate.mkdir()
        shutil.copy(PROJECT / "exercises" / "multihead_attention.py", boilerplate / "multihead_attention.py")
        ours = time_similarity(scratch / "class", scratch / "out")
        ours_subset = time_similarity(subset, scratch / "out-subset")
        baseline_subset = time_copydetect(subset, boilerplate)
        listed = json.loads((scratch / "out" / "similarity.json").read_text())
    baseline = baseline_subset * pairs(options.n) / pairs(options.baseline_n)
    figures = {"n": options.n, "pairs": pairs(options.n), "mha_similarity_s": round(ours, 2),
               "mha_similarity_subset_s": round(ours_subset, 2), "baseline_n": options.baseline_n,
               "copydetect_subset_s": round(baseline_subset, 2), "copydetect_extrapolated_s": round(baseline, 1),
               "speedup": round(baseline / ours, 1), "pairs_listed": len(listed["pairs"]),
               "flagged_answer_key": sum(match["matches_answer_key"] for match in listed["reference_matches"])}
    print(f"mha similarity, {options.n} submissions ({pairs(options.n):,} pairs): {ours:.1f} s end to end")
    print(f"mha similarity, {options.baseline_n} submissions: {ours_subset:.1f} s")
    print(f"copydetect CopyDetector, {options.baseline_n} submissions: {baseline_subset:.1f} s; "
          f"extrapolated to {options.n}: {baseline:.0f} s ({baseline / 60:.1f} min)")
    print(f"ratio copydetect / mha similarity at {options.n}: {baseline / ours:.1f}x")
    if options.json:
        options.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
