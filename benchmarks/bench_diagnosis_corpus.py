"""How well the diagnosis does on code written the way public implementations are written.

    python benchmarks/bench_diagnosis_corpus.py [--corpus corpus2] [--jobs 2] [--json figures.json] [FOLDER ...]

The held-out corpus lives in the core exercise's mutant library, in
``mutants/correct/corpus/`` and ``mutants/mistakes/corpus/``: modules on the
exercise's API in the styles of course repositories, tutorials, interview
preparation and framework ports, correct or carrying one or two catalogued
mistakes, each declaring what it is on an ``# expect:`` line. Every module is
checked by the installed command, ``mha check --all --json FILE`` (public and
hidden checks, through the sandbox, as a student runs it), and the four
figures of the diagnosis goal are printed:

    correct at full marks   correct modules with every point and no catalog id
    buggy detected          modules with a mistake that lose at least one point
    ids named               expected catalog ids named, over all expected ids
    spurious ids            catalog ids named that the module does not have

followed by every miss (a correct module losing points, a mistake that
survives, an expected id not named, an id named that is not there). ``--corpus corpus2``
measures the second corpus (``mutants/*/corpus2/``), written in styles neither
corpus nor the rest of the library holds, after the rules had been fixed
against the first; ``--corpus corpus3`` the third, written the same way after corpus2's fixes;
``--corpus corpus4`` the fourth, written after corpus3's; ``--corpus corpus5`` the fifth, after
corpus4's; ``--corpus corpus6`` the sixth, after corpus5's; ``--corpus corpus7`` the seventh, after corpus6's;
``--corpus`` is repeatable. FOLDER
(repeatable) replaces the corpus, for example the whole library:
``grader/assignments/multihead_attention/mutants``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from grader.authoring.audit import CORRECT, UNCATALOGUED, library_modules  # noqa: E402

LIBRARY = PROJECT / "grader" / "assignments" / "multihead_attention" / "mutants"
# each written after the rules were fixed against the ones before it
CORPORA = ("corpus", "corpus2", "corpus3", "corpus4", "corpus5", "corpus6", "corpus7")


def corpus_folders(name: str) -> tuple[Path, Path]:
    """The correct and the mistaken half of one corpus of the library."""
    return LIBRARY / "correct" / name, LIBRARY / "mistakes" / name


@dataclass(frozen=True)
class Checked:
    path: str
    expected: tuple[str, ...]  # catalog ids, or ("correct",) / ("uncatalogued",)
    status: str
    score: float
    max_score: float
    named: tuple[str, ...]  # the ids the check named, in its order
    error: str = ""
    lost: tuple[str, ...] = ()  # "check: outcome (id)" of every check that did not pass

    @property
    def is_correct(self) -> bool:
        return self.expected == (CORRECT,)

    @property
    def wanted(self) -> set[str]:
        return set(self.expected) - {CORRECT, UNCATALOGUED}

    @property
    def spurious(self) -> set[str]:
        return set(self.named) - self.wanted

    @property
    def missing(self) -> set[str]:
        return self.wanted - set(self.named)


def check(path: Path, expected: str, mha: str) -> Checked:
    """``mha check --all --json path``, read back."""
    done = subprocess.run([mha, "check", "--all", "--json", "--no-hints", str(path)], capture_output=True,
                          text=True, cwd=path.parent, timeout=600)
    ids = tuple(part.strip() for part in expected.split(","))
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        return Checked(str(path), ids, "no-json", 0.0, 0.0, (), (done.stderr or done.stdout).strip()[-300:])
    lost = tuple(f"{test['name']}: {test['outcome']} ({test['misconception']})" for test in result.get("tests", [])
                 if test["outcome"] != "passed")
    return Checked(str(path), ids, result["status"], float(result["score"] or 0), float(result["max_score"] or 0),
                   tuple(result["misconceptions"]), result.get("error") or "", lost)


def figures(found: list[Checked]) -> dict:
    correct = [item for item in found if item.is_correct]
    buggy = [item for item in found if not item.is_correct]
    expected_ids = sum(len(item.wanted) for item in buggy)
    named_ids = sum(len(item.wanted & set(item.named)) for item in buggy)
    return {
        "correct": len(correct),
        "correct_full_marks": sum(item.status == "graded" and item.score == item.max_score and not item.named
                                  for item in correct),
        "buggy": len(buggy),
        "buggy_detected": sum(item.status == "graded" and item.score < item.max_score for item in buggy),
        "expected_ids": expected_ids,
        "named_ids": named_ids,
        "spurious_ids": sum(len(item.spurious) for item in found),
    }


def misses(found: list[Checked]) -> list[str]:
    lines = []
    for item in found:
        name = Path(item.path).relative_to(LIBRARY) if Path(item.path).is_relative_to(LIBRARY) else item.path
        said = ", ".join(item.named) or "no id"
        if item.status != "graded":
            lines.append(f"{name}: {item.status}: {item.error}")
        elif item.is_correct and (item.score < item.max_score or item.named):
            lines.append(f"{name}: correct but {item.score:g}/{item.max_score:g}, named {said}; lost "
                         f"{'; '.join(item.lost)}")
        elif not item.is_correct and item.score == item.max_score:
            lines.append(f"{name}: survives with full marks (expected {', '.join(item.expected)})")
        elif item.missing or item.spurious:
            parts = []
            if item.missing:
                parts.append(f"not named: {', '.join(sorted(item.missing))}")
            if item.spurious:
                parts.append(f"spurious: {', '.join(sorted(item.spurious))}")
            lines.append(f"{name}: {'; '.join(parts)} (named {said})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="library folders to measure (default: the corpus)")
    parser.add_argument("--corpus", choices=CORPORA, action="append",
                        help="which corpus to measure, repeatable (default: corpus; ignored when FOLDERs are given)")
    parser.add_argument("--jobs", type=int, default=2, help="checks run at once (default 2)")
    parser.add_argument("--json", type=Path, help="also write the figures and every module's result here")
    options = parser.parse_args()
    chosen = [folder for name in (options.corpus or ["corpus"]) for folder in corpus_folders(name)]
    mha = shutil.which("mha") or str(Path(sys.executable).with_name("mha"))
    modules = [module for folder in (options.folders or chosen) for module in library_modules(folder.resolve())]
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        found = list(pool.map(lambda module: check(*module, mha), modules))
    numbers = figures(found)
    print(f"correct at full marks: {numbers['correct_full_marks']}/{numbers['correct']}")
    print(f"buggy detected:        {numbers['buggy_detected']}/{numbers['buggy']}")
    share = 100 * numbers["named_ids"] / numbers["expected_ids"] if numbers["expected_ids"] else 100.0
    print(f"ids named:             {numbers['named_ids']}/{numbers['expected_ids']} ({share:.1f}%, goal >= 95%)")
    print(f"spurious ids:          {numbers['spurious_ids']} (goal 0)")
    missed = misses(found)
    print(f"misses: {len(missed)}")
    for line in missed:
        print(f"  {line}")
    if options.json:
        options.json.write_text(json.dumps({"figures": numbers, "modules": [
            {**asdict(item), "expected": list(item.expected), "named": list(item.named), "lost": list(item.lost)}
            for item in found]},
            indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
