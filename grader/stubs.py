"""Generate student stubs from a reference module with solution markers.

A solution body sits between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
(the nbgrader convention). In the stub, that block becomes a bilingual TODO
and a hint taken from the block's ``# HINT(en):`` / ``# HINT(zh):`` lines,
followed by ``raise NotImplementedError``. A block inside ``__init__`` ends
without the raise: the constructor must still build the object so that the
student's other methods can be checked.
"""

from __future__ import annotations

import re
from pathlib import Path

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
# The reference's conventions, used wherever its source is cut (stubs, notebooks, drills):
HINT = re.compile(r"#\s*HINT\((en|zh)\):\s*(.*)")  # a hint line of the reference: its language and text
DEF = re.compile(r"^\s*def\s+(\w+)\s*\(")  # a function or method starts: its name
HINT_LABELS = {"en": "Hint: ", "zh": "提示："}  # how a stub writes a hint, ``# <label><text>``
STUB_HINT = re.compile(r"^\s*# (" + "|".join(map(re.escape, HINT_LABELS.values())) + ")")  # a stub's hint line


class MarkerError(ValueError):
    """The solution markers of a reference module are unbalanced."""


def generate_stub(source: str, *, origin: str = "<reference>") -> str:
    """Return the stub text for a reference module's ``source``."""
    lines = source.splitlines()
    output: list[str] = []
    function = None
    block: list[str] | None = None
    indent = ""
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if block is None:
            match = DEF.match(line)
            if match:
                function = match.group(1)
            if stripped == BEGIN:
                block, indent = [], line[: len(line) - len(line.lstrip())]
            elif stripped == END:
                raise MarkerError(f"{origin}:{number}: {END} without {BEGIN}")
            else:
                output.append(line)
            continue
        if stripped == BEGIN:
            raise MarkerError(f"{origin}:{number}: nested {BEGIN}")
        if stripped == END:
            output.extend(_todo(block, indent, function))
            block = None
            continue
        block.append(line)
    if block is not None:
        raise MarkerError(f"{origin}: {BEGIN} is never closed")
    stub = "\n".join(output) + "\n"
    compile(stub, f"stub of {origin}", "exec")  # a constructor block must not be its whole body
    return stub


def _todo(block: list[str], indent: str, function: str | None) -> list[str]:
    hints = {lang: text for lang, text in (_hint(line) for line in block) if lang}
    name = function or "this block"
    lines = [
        f"{indent}# TODO: implement {name}.",
        f"{indent}# TODO：实现 {name}。",
    ]
    if "en" in hints:
        lines.append(f"{indent}# {HINT_LABELS['en']}{hints['en']}")
    if "zh" in hints:
        lines.append(f"{indent}# {HINT_LABELS['zh']}{hints['zh']}")
    if function != "__init__":
        lines.append(
            f'{indent}raise NotImplementedError("{name}: not implemented yet / 尚未实现")'
        )
    return lines


def _hint(line: str) -> tuple[str | None, str]:
    match = HINT.search(line)
    return (match.group(1), match.group(2).strip()) if match else (None, "")


def strip_markers(source: str) -> str:
    """Return the reference with marker and hint lines removed (the pure solution)."""
    kept = []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped in (BEGIN, END) or HINT.search(line):
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def write_stub(reference: Path, target: Path) -> bool:
    """Write the stub of ``reference`` to ``target``; return True if it changed."""
    text = generate_stub(reference.read_text(encoding="utf-8"), origin=str(reference))
    if target.exists() and target.read_text(encoding="utf-8") == text:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return True


def main() -> None:
    """Regenerate every stub in exercises/ from solutions/ (``python -m grader.stubs``)."""
    from grader.paths import PROJECT_DIR

    for reference in sorted((PROJECT_DIR / "solutions").glob("*.py")):
        target = PROJECT_DIR / "exercises" / reference.name
        print(("wrote " if write_stub(reference, target) else "up to date: ") + str(target))


if __name__ == "__main__":
    main()
