"""Call limits calibrated from the reference's own time on this machine, measured once per run.

A call of a student's function may take a generous multiple of what the
reference takes for the same call, through the same worker path (a confined
worker of the run's fork server, the same streamed batch), and never less
than a floor. So a correct but slow style (Python loops over every element)
is never cut off, while an infinite loop is stopped in about half a second
instead of five. Loading the submission gets its own, longer limit.

The measurement is kept for the run (in this process; ``mha grade`` hands it
to its grading processes). A class's run never reads one from disk: another
machine, or the same one under other load, needs its own. A student's check
keeps the reference's timings per machine and interpreter between runs
(``grader.grading.calibration_cache``), measured again when stale. Where the reference is not installed (a
student's release) the limits are a fixed default, and the note says so.

This module holds the limits and their arithmetic; the reference is timed by
``grader.grading.grade.time_reference``, through the sandbox like a submission.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Callable

from grader.content.messages import render

MULTIPLE = 50.0  # a call may take this many times the reference's time for the same call...
FLOOR = 0.5  # ... and never less than this many seconds
LOAD_MULTIPLE = 50.0
LOAD_FLOOR = 2.0  # seconds to load a submission, at least: notebooks may run their own demo cells
UNCALIBRATED = 2.0  # seconds per call where there is no reference to time
ROUNDS = 3  # the reference's calls are timed this many times; the median of each counts
CALIBRATION_SEED = 0  # hidden cases of some student's sizes: every student's are alike in scale

_RUN: dict[tuple, Calibration] = {}  # this process's calibrations (one run), by assignment and scale


@dataclass(frozen=True)
class Calibration:
    """Seconds each graded function's calls may take, and what they were derived from."""

    limits: dict = field(default_factory=dict)  # function -> seconds per call
    load_limit: float = 10.0  # seconds to load the submission
    reference: dict = field(default_factory=dict)  # function -> the reference's seconds for its slowest call
    reference_load: float = 0.0
    scale: float = 1.0
    calibrated: bool = False  # False: no reference here, every call gets ``default``
    default: float = UNCALIBRATED  # seconds for a function the calibration did not time

    def limit(self, function: str) -> float:
        """Seconds one call of ``function`` may take (a method call includes building the instance)."""
        return self.limits.get(function, self.default)

    def note(self, lang: str) -> str:
        """One line for the result's ``isolation``: the limits in force and where they come from."""
        scale = render("call_limits_scale", {"scale": f"{self.scale:g}"}, lang) if self.scale != 1 else ""
        if not self.calibrated:
            return render("call_limits_default", {"limit": f"{self.default:g}", "scale": scale}, lang)
        values = sorted(set(self.limits.values()))
        limits = f"{values[0]:g}" if len(values) == 1 else ", ".join(
            f"{function} {seconds:g}" for function, seconds in self.limits.items())
        return render("call_limits_calibrated", {"limits": limits, "multiple": f"{MULTIPLE:g}", "floor": f"{FLOOR:g}",
                                                 "load": f"{self.load_limit:g}", "scale": scale}, lang)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Calibration:
        return cls(**data)


def uncalibrated(*, call_timeout: float = 5.0, load_timeout: float = 0.0, scale: float = 1.0) -> Calibration:
    """The fixed limits used where the reference cannot be timed (from the sandbox's own limits)."""
    return Calibration(load_limit=round(scale * (load_timeout or 2 * call_timeout), 3), scale=scale,
                       default=round(scale * min(UNCALIBRATED, call_timeout), 3))


def from_times(times: dict[str, list[list[float]]], load_seconds: float, *, scale: float = 1.0) -> Calibration:
    """The limits from the reference's times: ``times[function]`` holds, for each of its calls, the seconds of
    every round; a function's limit follows its slowest call (the median of its rounds)."""
    slowest = {function: max(statistics.median(rounds) for rounds in calls) for function, calls in times.items()}
    call_limits = {function: round(scale * max(FLOOR, MULTIPLE * seconds), 3) for function, seconds in slowest.items()}
    return Calibration(
        limits=call_limits, load_limit=round(scale * max(LOAD_FLOOR, LOAD_MULTIPLE * load_seconds), 3),
        reference={function: round(seconds, 6) for function, seconds in slowest.items()},
        reference_load=round(load_seconds, 6), scale=scale, calibrated=True,
        default=max(call_limits.values(), default=round(scale * FLOOR, 3)),
    )


def measured(key: tuple) -> bool:
    """Whether this process has the calibration under ``key`` already (``for_run`` will not measure)."""
    return key in _RUN


def for_run(key: tuple, measure: Callable[[], Calibration]) -> Calibration:
    """This run's calibration under ``key``: ``measure()`` on first use, then kept for the process."""
    if key not in _RUN:
        _RUN[key] = measure()
    return _RUN[key]


def forget_run(key: tuple) -> None:
    """Drop this process's calibration under ``key``: the next ``for_run`` measures again."""
    _RUN.pop(key, None)
