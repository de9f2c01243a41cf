"""What a failure may show of its case: the input sizes, and a slice of expected against got.

A shipped public fixture (``Case.shows_values``) may show its values: the
row where the student's value first differs, expected above the student's.
A public check on drawn inputs (a graded run) shows the sizes and where the
values first differ, not the values. A hidden check shows nothing of its
inputs or expected values: its explanation is the diagnosis alone.
"""

from __future__ import annotations

import numpy as np

from grader.grading.case import Case, same_value
from grader.grading.findings import message_data

SHOWN_ENTRIES = 6  # entries of a row quoted at most


def hidden(case: Case) -> bool:
    return case.id.startswith("hidden:")


def input_sizes(case: Case) -> tuple | None:
    """``Q (2, 3, 5, 4), K (2, 3, 7, 4), V (2, 3, 7, 4)`` for a visible case."""
    if hidden(case):
        return None
    names = case.argument_names or ()
    parts = []
    for position, value in enumerate(case.args):
        name = names[position] if position < len(names) else f"#{position + 1}"
        shape = getattr(value, "shape", None)
        parts.append(f"{name} {tuple(shape)}" if shape is not None else f"{name} = {value!r}")
    if case.class_name and case.init:
        parts.insert(0, f"{case.class_name}({', '.join(str(item) for item in case.init)})")
    return message_data("case_inputs", {"sizes": ", ".join(parts)}) if parts else None


def value_detail(case: Case, got) -> tuple[tuple, ...]:
    """The input sizes and where ``got`` first differs from the expected value (with values when allowed)."""
    if hidden(case):
        return ()
    shown = [message for message in (input_sizes(case),) if message is not None]
    pair = _first_differing(case.expected, got, case.call_text or case.function, case.output_names)
    if pair is None:
        return tuple(shown)
    what, expected, value = pair
    difference = ~np.isclose(value.astype(np.float64), expected.astype(np.float64), rtol=1e-4, atol=1e-6,
                             equal_nan=True)
    if not difference.any():
        return tuple(shown)
    index = tuple(int(i) for i in np.argwhere(difference)[0])
    where = f"{what}[{', '.join(str(i) for i in index)}]" if index else what
    if not case.shows_values:
        return (*shown, message_data("case_differs_at", {"where": where}))
    row_index, column = index[:-1], index[-1] if index else 0
    expected_row = np.atleast_1d(expected[row_index]) if index else np.atleast_1d(expected)
    got_row = np.atleast_1d(value[row_index]) if index else np.atleast_1d(value)
    start = max(0, min(column - 2, got_row.size - SHOWN_ENTRIES))
    return (*shown, message_data("case_first_difference", {
        "where": where, "expected": _number(expected[index] if index else expected),
        "got": _number(value[index] if index else value),
        "row": f"{what}[{', '.join(str(i) for i in row_index)}{', ' if row_index else ''}{_span(start, got_row.size)}]",
        "expected_row": _numbers(expected_row, start), "got_row": _numbers(got_row, start)}))


def _first_differing(expected, got, what: str, names: tuple | None = None):
    """``(what, expected array, got array)`` of the first item (of a tuple) that differs, same shapes only."""
    if isinstance(expected, tuple):
        if not isinstance(got, tuple) or len(got) != len(expected):
            return None
        for position, (expected_item, got_item) in enumerate(zip(expected, got)):
            if not same_value(got_item, expected_item):
                name = names[position] if names and position < len(names) else f"{what}[{position}]"
                return _first_differing(expected_item, got_item, name)
        return None
    if names and len(names) == 1:
        what = names[0]
    if isinstance(expected, np.ndarray) and isinstance(got, np.ndarray) and got.shape == expected.shape \
            and got.dtype.kind in "biuf":
        return what, expected, got
    return None


def _span(start: int, size: int) -> str:
    end = min(size, start + SHOWN_ENTRIES)
    return ":" if (start, end) == (0, size) else f"{start}:{end}"


def _number(value) -> str:
    return f"{float(value):.4g}"


def _numbers(row: np.ndarray, start: int) -> str:
    part = [_number(value) for value in row[start:start + SHOWN_ENTRIES]]
    return "[" + (", ".join(part)) + (", ..." if start + SHOWN_ENTRIES < row.size else "") + "]"
