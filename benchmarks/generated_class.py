"""A generated class for the benchmark: correct submissions in several styles and typical mistakes.

Correct ones are the reference and the correct submissions of the demo class;
buggy ones are the reference with one catalogued mistake put in by text
replacement (each replacement is checked to apply). ``write_class`` writes no
infinite loops; ``write_realistic_class`` adds a share of submissions that
each hang in one function (the five graded functions in turn, as a spinning
``while True`` or a Python loop too long to finish: both burn a core, the
worst case for the grader's cost).
"""

from __future__ import annotations

from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
DEMO = PROJECT / "examples" / "demo_class"
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
CORRECT_STYLES = ("amara_einsum", "bilal_loops", "chen_float32", "dmitri_swapaxes", "esi_tensordot")

# name -> (text to find in the reference, what to put instead)
MISTAKES = {
    "attention-no-scale": ("/ np.sqrt(d_k)", ""),
    "attention-wrong-scale": ("/ np.sqrt(d_k)", "/ d_k"),
    "softmax-unstable": ("shifted = x - np.max(x, axis=-1, keepdims=True)", "shifted = x"),
    "softmax-wrong-axis": ("np.sum(exponentials, axis=-1, keepdims=True)", "np.sum(exponentials, axis=0, keepdims=True)"),
    "split-heads-no-transpose": ("x = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, T, H, d_k)\n"
                                 "        return x.transpose(0, 2, 1, 3)",
                                 "return x.reshape(batch, self.num_heads, length, self.d_k)"),
    "mha-no-output-projection": ("out = self.combine_heads(heads) @ self.W_O", "out = self.combine_heads(heads)"),
    "mha-no-divisibility-check": ("if d_model % num_heads != 0:", "if False:"),
    "mha-ignores-key-value": ("keys = self.split_heads(K @ self.W_K)", "keys = self.split_heads(Q @ self.W_K)"),
}
# function -> a line of the reference the hang is put in front of
HANG_BEFORE = {
    "softmax": "shifted = x - np.max(x, axis=-1, keepdims=True)",
    "scaled_dot_product_attention": "scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)",
    "split_heads": "x = x.reshape(batch, length, self.num_heads, self.d_k)",
    "combine_heads": "x = x.transpose(0, 2, 1, 3)  # (B, T, H, d_k)",
    "forward": "heads, weights = scaled_dot_product_attention(queries, keys, values)",
}
HANG_STYLES = ("while True:\n{indent}    pass\n", "for _ in range(10**12):\n{indent}    pass\n")
SYNTAX_ERROR = "import numpy as np\n\n\ndef softmax(x)\n    return np.exp(x)\n"


def templates() -> list[tuple[str, str]]:
    """(kind, source) in the order the class cycles through: about half right, half wrong."""
    reference = REFERENCE.read_text(encoding="utf-8")
    correct = [("correct:reference", reference)] + [
        (f"correct:{name}", (DEMO / f"{name}.py").read_text(encoding="utf-8")) for name in CORRECT_STYLES]
    buggy = []
    for name, (old, new) in MISTAKES.items():
        if old not in reference:
            raise RuntimeError(f"the reference no longer contains the text the {name} mutation replaces")
        buggy.append((f"buggy:{name}", reference.replace(old, new, 1)))
    buggy.append(("buggy:syntax-error", SYNTAX_ERROR))
    mixed = []
    for index in range(max(len(correct), len(buggy))):
        mixed += [correct[index % len(correct)], buggy[index % len(buggy)]]
    return mixed


def write_class(folder: Path, count: int) -> list[tuple[str, str]]:
    """Write ``count`` submissions ``student_0001.py``...; returns (student, kind) of each."""
    folder.mkdir(parents=True, exist_ok=True)
    cycle = templates()
    written = []
    for index in range(count):
        kind, source = cycle[index % len(cycle)]
        student = f"student_{index + 1:04d}"
        (folder / f"{student}.py").write_text(source, encoding="utf-8")
        written.append((student, kind))
    return written


def mistaken_templates() -> list[tuple[str, str]]:
    """(kind, source) with one catalogued mistake, then with two at once (every pair whose replacements
    both apply), alternating."""
    reference = REFERENCE.read_text(encoding="utf-8")
    names = list(MISTAKES)
    single = [(f"buggy:{name}", reference.replace(*MISTAKES[name], 1)) for name in names]
    double = []
    for position, first in enumerate(names):
        for second in names[position + 1:]:
            once = reference.replace(*MISTAKES[first], 1)
            if MISTAKES[second][0] in once and MISTAKES[first][0] not in MISTAKES[second][0]:
                double.append((f"buggy:{first}+{second}", once.replace(*MISTAKES[second], 1)))
    mixed = []
    for index in range(max(len(single), len(double))):
        mixed += [single[index % len(single)], double[index % len(double)]]
    return mixed


def write_mistaken_class(folder: Path, count: int, *, share: float = 0.8) -> list[tuple[str, str]]:
    """A class where ``share`` of the submissions carry one or two catalogued mistakes and the rest are
    correct (the reference and the demo class's styles), spread evenly. Returns (student, kind) of each."""
    folder.mkdir(parents=True, exist_ok=True)
    reference = REFERENCE.read_text(encoding="utf-8")
    correct = [("correct:reference", reference)] + [
        (f"correct:{name}", (DEMO / f"{name}.py").read_text(encoding="utf-8")) for name in CORRECT_STYLES]
    buggy = mistaken_templates()
    written = []
    for index in range(count):
        wrong = int((index + 1) * share) > int(index * share)  # spreads round(count * share) mistakes evenly
        pool = buggy if wrong else correct
        kind, source = pool[index % len(pool)]
        student = f"student_{index + 1:04d}"
        (folder / f"{student}.py").write_text(source, encoding="utf-8")
        written.append((student, kind))
    return written


def hanging(function: str, style: int = 0) -> str:
    """The reference with an endless loop at the start of ``function``'s work."""
    reference = REFERENCE.read_text(encoding="utf-8")
    anchor = HANG_BEFORE[function]
    if reference.count(anchor) != 1:
        raise RuntimeError(f"the reference no longer holds exactly one line the {function} hang goes before")
    start = reference.index(anchor)
    indent = reference[reference.rindex("\n", 0, start) + 1:start]
    return reference[:start] + HANG_STYLES[style % len(HANG_STYLES)].format(indent=indent) + indent + reference[start:]


def write_realistic_class(folder: Path, count: int, *, share: float = 0.05) -> list[tuple[str, str]]:
    """``write_class(folder, count)`` plus hanging submissions making ``share`` of the whole class.

    They are spread through the class (``student_hang_0001.py``...), hanging in
    each of the five graded functions in turn. Returns (student, kind) of each.
    """
    written = write_class(folder, count)
    functions = list(HANG_BEFORE)
    for index in range(round(count * share / (1 - share))):
        function = functions[index % len(functions)]
        student = f"student_{(index * count) // max(1, round(count * share / (1 - share))) + 1:04d}_hang"
        (folder / f"{student}.py").write_text(hanging(function, index // len(functions)), encoding="utf-8")
        written.append((student, f"hang:{function}"))
    return written
