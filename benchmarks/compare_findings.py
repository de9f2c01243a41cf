"""Every check's full result under two versions of the code, compared byte for byte.

    git archive <commit> | tar -x -C /tmp/before
    python benchmarks/compare_findings.py /tmp/before .                   # grade with both, compare
    python benchmarks/compare_findings.py /tmp/before . --keep /tmp/dumps  # also keep each dump
    python benchmarks/compare_findings.py /tmp/dumps/before.jsonl .        # a kept dump against a tree

Each tree grades, in one fresh process of its own (``run_checks`` with the
submission imported, as ``in_process.py`` does: every check, public and
hidden, the cases drawn for the student), every module of every exercise's
mutant library and each of the generated class's templates (``generated_class``:
the correct styles, the mistakes one and two at a time, the syntax error) for
three students, and writes one JSON line per grading: every check's
``to_dict()`` (outcome, id, root cause, message, alternatives, details). A
speed-up of the diagnosis must leave every line as it was; the first lines
that differ are printed and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ONE_TREE = r"""
import json, sys, time
from pathlib import Path
tree, out = Path(sys.argv[1]), Path(sys.argv[2])
sys.path[:0] = [str(tree), str(tree / "benchmarks")]
import grader
assert grader.__file__.startswith(str(tree)), grader.__file__
from generated_class import mistaken_templates, templates
from grader.grading.grade import plan_checks, run_checks
from grader.sandbox.in_process import InProcessBox
started, count = time.process_time(), 0
with out.open("w", encoding="utf-8") as lines:
    def grade(assignment, path, student, label):
        global count
        plan = plan_checks(assignment=assignment, visibility="all", student=student)
        try:
            box = InProcessBox.load(path, name=f"findings_{count}")
        except Exception as error:
            ends = f"load: {type(error).__name__}: {error}".replace(str(path.parent), "<folder>")
        else:
            ends = [result.to_dict() for result in run_checks(box, plan=plan, visibility="all")]
        lines.write(json.dumps([label, student, ends], ensure_ascii=False, default=repr) + "\n")
        count += 1
    for folder in sorted((tree / "grader" / "assignments").iterdir()):
        for path in sorted((folder / "mutants").glob("**/*.py")) if (folder / "mutants").is_dir() else ():
            grade(folder.name, path, "library", f"{folder.name}/{path.relative_to(folder / 'mutants')}")
    work = out.parent / (out.stem + "-templates")
    work.mkdir(exist_ok=True)
    for index, (kind, source) in enumerate(mistaken_templates() + templates()):
        path = work / f"template_{index}.py"
        path.write_text(source, encoding="utf-8")
        for student in ("s1", "s2", "s3"):
            grade("multihead_attention", path, student, f"template {index} {kind}")
print(f"{count} gradings, {time.process_time() - started:.1f} s of CPU")
"""


def dump(tree: Path, out: Path) -> Path:
    """Grade everything with ``tree``'s code; the JSON lines in ``out`` (a dump given as ``tree`` is read)."""
    if tree.is_file():
        return tree
    done = subprocess.run([sys.executable, "-c", ONE_TREE, str(tree.resolve()), str(out)], capture_output=True,
                          text=True, cwd=out.parent)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: grading failed\n{done.stderr[-3000:]}")
    print(f"{tree}: {done.stdout.strip().splitlines()[-1]}")
    return out


def differences(old: list, new: list) -> list[str]:
    """What differs between two gradings of one module: each check's fields that changed, before and after."""
    label, student, before = old
    after = new[2]
    lines = [f"{label} ({student}):"]
    if isinstance(before, str) or isinstance(after, str) or len(before) != len(after):
        return lines + [f"  - {str(before)[:1500]}", f"  + {str(after)[:1500]}"]
    for check, changed in zip(before, after):
        for key in sorted(set(check) | set(changed)):
            if check.get(key) != changed.get(key):
                lines += [f"  {check.get('name')} {key}:", f"    - {str(check.get(key))[:700]}",
                          f"    + {str(changed.get(key))[:700]}"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a tree of the code, or a dump this script kept")
    parser.add_argument("after", type=Path, help="a tree of the code, or a dump this script kept")
    parser.add_argument("--keep", type=Path, default=None, help="a folder to keep both dumps in")
    parser.add_argument("--show", type=int, default=5, help="how many differing gradings to print")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mha-findings-") as scratch:
        folder = options.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        first = dump(options.before, folder / "before.jsonl").read_text(encoding="utf-8").splitlines()
        second = dump(options.after, folder / "after.jsonl").read_text(encoding="utf-8").splitlines()
    if len(first) != len(second):
        raise SystemExit(f"{len(first)} gradings against {len(second)}: the library or the templates differ")
    differing = [(old, new) for old, new in zip(first, second) if old != new]
    for old, new in differing[:options.show]:
        print("\n".join(differences(json.loads(old), json.loads(new))) + "\n")
    print(f"{len(first)} gradings, {len(differing)} differing")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
