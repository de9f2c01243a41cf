"""The trusted side's CPU per submission under two versions of the code, alternating in one run.

    git archive <commit> | tar -x -C /tmp/before
    python benchmarks/bench_versions.py /tmp/before . [--n 40] [--rounds 3] [--mistaken-share 0.8]

Writes a generated class (``generated_class.write_class``: correct code in six
styles, the reference with one catalogued mistake, a syntax error; with
``--mistaken-share``, ``write_mistaken_class``: that share with one or two
mistakes, the rest correct), then, for
each round, grades it in one fresh process per tree (``in_process.grade_in_process``:
every check, the cases drawn for each student, the twins and the fits, with
the submission imported: no sandbox), the trees taking turns so load falls on
both alike. Prints each tree's mean and median CPU time per submission and
the ratio of the second to the first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generated_class import write_class, write_mistaken_class  # noqa: E402

ONE_TREE = """
import json, statistics, sys, time
from pathlib import Path
root, folder = sys.argv[1], Path(sys.argv[2])
sys.path[:0] = [root, root + "/benchmarks"]
import grader
assert grader.__file__.startswith(root), grader.__file__
from in_process import grade_in_process
paths = sorted(folder.glob("*.py"))
grade_in_process(paths[0], student="warm-up")
spent = []
for path in paths:
    started = time.process_time()
    grade_in_process(path, student=path.stem)
    spent.append(time.process_time() - started)
print(json.dumps(spent))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mistaken-share", type=float, default=None,
                        help="grade the class where this share carries one or two mistakes instead")
    options = parser.parse_args()
    trees = [str(options.before.resolve()), str(options.after.resolve())]
    spent: dict[str, list[float]] = {tree: [] for tree in trees}
    with tempfile.TemporaryDirectory(prefix="mha-bench-versions-") as folder:
        if options.mistaken_share is None:
            write_class(Path(folder), options.n)
        else:
            write_mistaken_class(Path(folder), options.n, share=options.mistaken_share)
        for _ in range(options.rounds):
            for tree in trees:
                done = subprocess.run([sys.executable, "-c", ONE_TREE, tree, folder], capture_output=True,
                                      text=True, check=True, cwd=folder)
                spent[tree] += json.loads(done.stdout.strip().splitlines()[-1])
    for tree in trees:
        print(f"{tree}: mean {1000 * statistics.mean(spent[tree]):.1f} ms, "
              f"median {1000 * statistics.median(spent[tree]):.1f} ms of CPU per submission "
              f"over {len(spent[tree])}")
    before, after = (statistics.mean(spent[tree]) for tree in trees)
    print(f"second / first: {after / before:.2f}x of means")


if __name__ == "__main__":
    main()
