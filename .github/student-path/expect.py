"""What the student-path workflow expects of each step, on any system (standard library only).

``expect.py gather FOLDER``: from the project's checkout, the code the student
jobs check: ``correct.py`` (the reference), ``buggy.py`` (a planted mistake:
split_heads reshapes without transposing), ``hanging.py`` (softmax never ends).

``expect.py run --status N [--misconception ID] [--timeout FUNCTION] [--within S] COMMAND...``:
run COMMAND (``mha check ... --json``), then hold it to its exit status, to a
misconception among its findings, to a function whose checks all timed out,
to a time limit, and to a quiet run: no traceback, no Python warning.

``expect.py notebook EXECUTED.ipynb``: the notebook's check cells each showed
a report (HTML), and no cell wrote a traceback or a warning.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
CODE = {  # what a student job checks, from the project's own fixtures (found where the checkout keeps them)
    "correct.py": "solutions/multihead_attention.py",
    "buggy.py": "grader/**/multihead_attention/**/mistakes/split_heads_no_transpose.py",
    "hanging.py": "tests/fixtures/hangs/softmax_while_true.py",
}
NOISE = ("Traceback", "Warning:", "warnings.warn")


def gather(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, pattern in CODE.items():
        found = sorted(PROJECT.glob(pattern))
        if len(found) != 1:
            fail(f"expected one file for {pattern} in {PROJECT}, found {len(found)}")
        shutil.copyfile(found[0], folder / name)
        print(f"{folder / name} <- {found[0].relative_to(PROJECT).as_posix()}")


SERVED = "Served by your warm check server"  # what `mha check --verbose` says of a check a warm server ran
SERVED_ATTEMPTS, SERVED_PAUSE = 3, 5.0


def fail(text: str) -> None:
    print(f"FAILED: {text}", file=sys.stderr)
    sys.exit(1)


def quiet(*streams: str) -> None:
    for stream in streams:
        for word in NOISE:
            if word in stream:
                fail(f"the output holds {word!r}:\n{stream[-3000:]}")


def run(options: argparse.Namespace) -> None:
    command = [word for position, word in enumerate(options.command) if position or word != "--"]
    if not command:
        fail("run: say which command to run")
    found = shutil.which(command[0])  # mha.exe on Windows
    if found is None:
        fail(f"{command[0]} is not on PATH")
    for attempt in range(1, SERVED_ATTEMPTS + 1 if options.served else 2):
        started = time.monotonic()
        done = subprocess.run([found, *command[1:]], capture_output=True, text=True, encoding="utf-8")
        took = time.monotonic() - started
        if not options.served or SERVED in done.stdout:
            break
        if attempt == SERVED_ATTEMPTS:
            fail(f"no check of {SERVED_ATTEMPTS} was served by the warm check server:\n{done.stdout[-3000:]}")
        time.sleep(SERVED_PAUSE)  # the standby the first check started may still be warming on a slow runner
    print(done.stdout[-4000:])
    print(done.stderr[-4000:], file=sys.stderr)
    print(f"{' '.join(command)}: exit status {done.returncode} in {took:.1f} s")
    if done.returncode != options.status:
        fail(f"expected exit status {options.status}, got {done.returncode}")
    quiet(done.stdout, done.stderr)
    if options.within is not None and took > options.within:
        fail(f"expected it within {options.within:g} s, it took {took:.1f} s")
    if options.misconception is None and options.timeout is None:
        return
    result = json.loads(done.stdout)
    found_ids = {test["misconception"] for test in result["tests"]}
    if options.misconception is not None and options.misconception not in found_ids:
        fail(f"expected {options.misconception} among the findings, got {sorted(map(str, found_ids))}")
    if options.timeout is not None:
        outcomes = {test["outcome"] for test in result["tests"] if test["function"] == options.timeout}
        if outcomes != {"timeout"}:
            fail(f"expected every check of {options.timeout} to time out, got {sorted(outcomes)}")
    print(f"isolation: {result.get('isolation', '')}")


def notebook(path: Path) -> None:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    checks = 0
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                fail(f"cell {cell.get('id')} raised {output.get('ename')}: {output.get('evalue')}")
        if str(cell.get("id", "")).startswith("check-"):
            quiet(*("".join(output.get("text", "")) for output in cell.get("outputs", [])
                    if output.get("output_type") == "stream"))
            shown = [output for output in cell.get("outputs", []) if "text/html" in output.get("data", {})]
            if len(shown) != 1 or "data-misconception=" not in "".join(shown[0]["data"]["text/html"]):
                fail(f"check cell {cell.get('id')} showed no report: {cell.get('outputs')}")
            checks += 1
    if not checks:
        fail("the notebook has no check cell")
    print(f"{checks} check cells showed their report")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    steps.add_parser("gather").add_argument("folder", type=Path)
    running = steps.add_parser("run")
    running.add_argument("--status", type=int, required=True)
    running.add_argument("--misconception")
    running.add_argument("--timeout", metavar="FUNCTION")
    running.add_argument("--within", type=float, metavar="SECONDS")
    running.add_argument("--served", action="store_true",
                         help="expect the warm check server to answer (the command's --verbose line says so)")
    # the rest of the line, options included, is the command (no "--": PowerShell may drop it on its way)
    running.add_argument("command", nargs=argparse.REMAINDER)
    steps.add_parser("notebook").add_argument("path", type=Path)
    options = parser.parse_args(argv)
    if options.step == "gather":
        gather(options.folder)
    elif options.step == "run":
        run(options)
    else:
        notebook(options.path)


if __name__ == "__main__":
    main(sys.argv[1:])
