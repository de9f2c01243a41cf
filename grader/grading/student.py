"""The student's code as the trusted side sees it: calls through the sandbox.

Every call goes to the worker, held to its function's own limit; replies are
cached per case, so several checks of one case cost one round trip, and
``prefetch`` asks for many cases in one streamed exchange. A function that
hung or crashed once is not called again, and calls that depend on it are
settled without being made (``grader.grading.settling``). What a call printed
is kept with it, so feedback can show a student's ``print`` output under the
check whose call produced it.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np

from grader.grading.case import Case
from grader.grading.settling import CONSTRUCTOR, Ledger, Stop
from grader.sandbox.codec import ForeignObject

if TYPE_CHECKING:  # annotations only: the proxy is handed an open box
    from grader.sandbox.client import CallOutcome, Limits


PRINTED_LIMIT = 2000  # bytes of one call's printed output kept
# A reply may hold REPLY_FACTOR times the bytes of the value the check expects (float128 of the right shape is
# twice float64; a wrong shape a few times larger still shows what it is), plus its inputs sent back and some
# room; a call with no expected value, REPLY_FACTOR times its inputs. Anything larger is described, not sent.
REPLY_FACTOR = 16
REPLY_ROOM = 1 << 16
KEPT_BYTES = 64 << 20  # of arrays the trusted side keeps of one submission's outcomes, in all
STAND_IN_ROUNDS = 8  # rounds of one call with stand-ins: each answers one more of their calls


class Box(Protocol):
    """What ``StudentCode`` needs of a loaded submission: ``grader.sandbox.client.Sandbox``, or in benchmarks
    the in-process stand-in ``grader.sandbox.in_process.InProcessBox``."""

    limits: Limits
    worker: object | None  # the worker the next call goes to; None: the next call starts one
    restarts: int  # workers started again after the first

    @property
    def budget_left(self) -> float:
        """Seconds left for all calls of the submission together."""

    def run(self, target: dict, args: tuple = (), kwargs: dict | None = None, *, timeout: float | None = None,
            stop_on: frozenset = frozenset(), reply_limit: int | None = None) -> CallOutcome:
        """One call, held to ``timeout``; it stops on entering a function of ``stop_on``."""

    def call_batch(self, calls: list[tuple[dict, tuple, dict]], *, timeouts: list[float] | None = None,
                   stop_on: frozenset = frozenset(), on_start: Callable[[int], None] | None = None,
                   reply_limits: list[int] | None = None) -> list[CallOutcome | None] | None:
        """Several calls in one exchange (None: none was made, each is made on its own)."""

    def output_size(self) -> int:
        """Bytes the submission has printed so far."""

    def output_since(self, offset: int, limit: int = 4000) -> str:
        """What it printed from ``offset`` on, at most ``limit`` bytes."""

    def retire(self) -> None:
        """Let no later call meet the submission as its calls so far left it (the next starts afresh)."""


class StudentCode:
    """``limit(function)``: seconds one call of it may take (default: the box's ``call_timeout``).
    ``on_call(function)`` is told as each call begins (a spinner shows it)."""

    def __init__(self, sandbox: Box, *, limit: Callable[[str], float] | None = None,
                 on_call: Callable[[str], None] | None = None):
        self.sandbox = sandbox
        self.limit = limit or (lambda function: sandbox.limits.call_timeout)
        self.on_call = on_call
        self.ledger = Ledger()
        # function -> the (misconception, label) of the twins its last explained failure matched
        self.twin_hints: dict[str, frozenset] = {}
        # (function, size pattern) of failures no twin explained (grading.checks._rule_out_twins): a mistake
        # the catalogue's twins do not make, so later failures of that kind are not run through every twin
        self.twins_ruled_out: set[tuple] = set()
        # function -> the cases it was called on with its callees stood in for (grading.checks._alone), None
        # once that named a mistake of its own: bounded per submission
        self.alone: dict[str, set | None] = {}
        self._cache: dict[str, tuple[CallOutcome, Stop | None]] = {}
        self._printed: dict[str, str] = {}  # case id -> what its call printed
        self._check_printed: list[str] | None = None  # what the calls of the running check printed
        self.kept = 0  # bytes of arrays in the outcomes kept (cached) for this submission, within KEPT_BYTES
        # a call with stand-ins was made in the worker: the submission may keep what they answered (the
        # reference's values for inputs it chose, such as those of checks still to come), so the next call a
        # check is graded on goes to a fresh worker (``_fresh``); calls made only to be shown
        # (``showing``) may still meet this one
        self._taught = False
        self._showing = False

    def invoke(self, case: Case) -> CallOutcome:
        """The student's value for ``case`` (cached by case id)."""
        if case.id not in self._cache:
            self._make_and_keep(case.id, case.function, request_of(case), construction_of(case), reply_limit_of(case))
        outcome, stop = self._cache[case.id]
        self.ledger.meet(stop)
        self._heard(self._printed.get(case.id, ""))
        return outcome

    def prefetch(self, cases) -> None:
        """Ask for every case not yet cached, in streamed exchanges, in the order given.

        Each instance a case needs is built once first, so that a constructor
        that hangs is found as itself. After a call that hangs or crashes, the
        rest are asked for again from a fresh worker, leaving out what that
        settles, as long as a restart stays for the checks' own calls; what
        is not asked for here is left to ``invoke``. A batch's output cannot be
        told apart call by call: when it printed anything, only what it taught
        the ledger is kept, and the calls are made again one by one, so each
        check shows what its own call printed.
        """
        plan: list[tuple[str, str, tuple, tuple | None, int]] = []  # (key, function, request, construction, limit)
        built: set = set()
        for case in cases:
            construction = construction_of(case)
            if construction is not None and construction not in built:
                built.add(construction)
                plan.append((f"build:{construction}", CONSTRUCTOR, construction_request(*construction), construction,
                             REPLY_ROOM))
            plan.append((case.id, case.function, request_of(case), construction, reply_limit_of(case)))
        while True:
            todo = [item for item in plan
                    if item[0] not in self._cache and self.ledger.settled(item[1], item[3]) is None]
            if not todo or not self._may_restart():
                return
            before: list[int] = []

            def on_start(index: int) -> None:
                if index == 0:
                    before.append(self._output_size())  # the worker is the one the batch goes to by now
                if self.on_call is not None:
                    self.on_call(todo[index][1])
            self._fresh()
            outcomes = self.sandbox.call_batch([item[2] for item in todo],
                                               timeouts=[self.limit(item[1]) for item in todo],
                                               stop_on=self.ledger.stop_on(), on_start=on_start,
                                               reply_limits=[item[4] for item in todo])
            if outcomes is None:
                return
            printed = bool(before) and self._output_size() != before[0]
            for (key, function, _, construction, _), outcome in zip(todo, outcomes):
                if outcome is None:
                    break
                learned = self._learn(function, outcome, construction)
                if not printed or learned[1] is not None:  # a stop is kept: it is not made again
                    self._cache[key] = (self._kept(learned[0]), learned[1])
            if printed:
                self._one_by_one(todo)
                return

    def _one_by_one(self, todo: list) -> None:
        """A batch that printed, its calls made again one by one at once, each case keeping what its own call
        printed (the constructions, whose outcomes the ledger has, are not made again). At once, not when each
        check asks: before any check's diagnosis makes a call with stand-ins, so that the calls checks are
        graded on meet no worker a stand-in taught (a later one still goes to a fresh worker: ``_fresh``)."""
        for key, function, request, construction, limit in todo:
            if key in self._cache or function == CONSTRUCTOR or self.ledger.settled(function, construction) is not None:
                continue
            if not self._may_restart():
                return  # what is left is made when its check asks (``invoke``)
            self._make_and_keep(key, function, request, construction, limit)

    def _make_and_keep(self, key: str, function: str, request: tuple, construction: tuple | None,
                       limit: int) -> None:
        """One call made on its own, its outcome and what it printed kept under ``key``."""
        (outcome, stop), printed = self._made(function, request, construction, reply_limit=limit)
        self._cache[key], self._printed[key] = (self._kept(outcome), stop), printed

    def _may_restart(self) -> bool:
        """Whether prefetching may go on: a worker is there, or starting one leaves a restart for the checks."""
        box = self.sandbox
        return box.worker is not None or box.limits.max_restarts - box.restarts > 1

    # ---- printed output ---------------------------------------------------------------------
    def begin_check(self, name: str | None = None) -> None:
        """The runner starts the check ``name``: collect what its calls print, and the stops it meets."""
        self._check_printed = []
        self.ledger.begin(name)

    def end_check(self) -> str:
        """What the calls of the check begun last printed, in call order, each call's output once."""
        printed, self._check_printed = self._check_printed or [], None
        return "".join(dict.fromkeys(text for text in printed if text))

    def _heard(self, text: str) -> None:
        if self._check_printed is not None and text:
            self._check_printed.append(text)

    def _output_size(self) -> int:
        return self.sandbox.output_size()

    # ``call`` and ``construct`` are never cached: checks use them for one-off inputs.
    def call(self, function: str, *args, like: Case | None = None, **kwargs) -> CallOutcome:
        """Call ``function`` on new inputs: a module function, or a method of a fresh
        instance built and set up the way ``like``'s instance is."""
        limit = REPLY_FACTOR * nbytes((args, kwargs)) + REPLY_ROOM
        if like is not None and like.class_name is not None:
            target = {"class": like.class_name, "init": list(like.init or ()), "attributes": like.weights or {},
                      "method": function}
            return self._deliver(*self._made(function, (target, args, kwargs), construction_of(like),
                                             reply_limit=limit))
        return self._deliver(*self._made(function, ({"function": function}, args, kwargs), None, reply_limit=limit))

    def construct(self, class_name: str, *init) -> CallOutcome:
        """Only build ``class_name(*init)``."""
        construction = (class_name, tuple(init))
        return self._deliver(*self._made(CONSTRUCTOR, construction_request(*construction), construction,
                                         reply_limit=REPLY_ROOM))

    def _made(self, function: str, request: tuple, construction: tuple | None, *,
              reply_limit: int | None = None) -> tuple[tuple[CallOutcome, Stop | None], str]:
        """The call's outcome and stop, made unless the ledger settles it, and what it printed."""
        stop = self.ledger.settled(function, construction)
        if stop is not None:
            return (settled_outcome(stop), stop), ""
        if self.on_call is not None:
            self.on_call(function)
        target, args, kwargs = request
        self._fresh()
        before = self._output_size()
        outcome = self.sandbox.run(target, args, kwargs, timeout=self.limit(function), stop_on=self.ledger.stop_on(),
                                   reply_limit=reply_limit)
        after = self._output_size()
        # nothing printed, or a fresh worker (whose output is not this call's alone): nothing to show
        printed = self.sandbox.output_since(before, min(after - before, PRINTED_LIMIT)) if after > before else ""
        return self._learn(function, outcome, construction), printed

    def stood_in(self, case: Case, callees: tuple, answer) -> CallOutcome | None:
        """``case``'s call with the submission's ``callees`` (``(name, "function" | "method")``) stood in for
        (``grader.sandbox.worker.standins``): each answers from a table of ``answer(name, args)``, the
        reference's value, grown by one entry a round. None when the call cannot be made so (a function that
        hung, arguments the reference takes no answer for, more rounds than ``STAND_IN_ROUNDS``). Only
        feedback reads it: the call is not the checks' own, and the ledger learns nothing from it."""
        if self.ledger.settled(case.function, construction_of(case)) is not None:
            return None
        tables = {name: [] for name, _ in callees}
        target, args, kwargs = request_of(case)
        try:
            for _ in range(STAND_IN_ROUNDS):
                target = {**target, "stand_ins": [[name, kind, tables[name]] for name, kind in callees]}
                outcome = self.sandbox.run(target, args, kwargs, timeout=self.limit(case.function),
                                           stop_on=self.ledger.stop_on(), reply_limit=reply_limit_of(case))
                if outcome.ended is not None:
                    return None
                if outcome.missing is None:
                    return outcome
                given = outcome.value
                if outcome.missing not in tables or not isinstance(given, tuple) or \
                        not all(isinstance(arg, np.ndarray) for arg in given):
                    return None
                try:
                    tables[outcome.missing].append([given, answer(outcome.missing, given)])
                except Exception:  # noqa: BLE001 - arguments the reference refuses: no right callee to stand in
                    return None
            return None
        finally:
            self._taught = True

    def _learn(self, function: str, outcome: CallOutcome, construction: tuple | None) -> tuple[CallOutcome, Stop | None]:
        given, stop = self.ledger.record(function, outcome, construction=construction, limit=self.limit(function),
                                         budget_left=self.sandbox.budget_left)
        return (given if given is not None else settled_outcome(stop)), stop

    def _kept(self, outcome: CallOutcome) -> CallOutcome:
        """The outcome as it is kept for later checks of its case: whole while the submission's outcomes stay
        within ``KEPT_BYTES``, else with its arrays described instead (graded as values of the wrong type)."""
        size = nbytes((outcome.value, outcome.args_after))
        if self.kept + size <= KEPT_BYTES:
            self.kept += size
            return outcome
        return replace(outcome, value=_described(outcome.value), args_after=_described(outcome.args_after))

    @contextlib.contextmanager
    def showing(self):
        """Calls made only for what feedback shows (a public fixture's rows), never graded: they may meet a
        worker that stand-ins taught."""
        self._showing = True
        try:
            yield
        finally:
            self._showing = False

    def _fresh(self) -> None:
        """Before a call a check is graded on: a worker that stand-ins taught is ended first."""
        if self._taught and not self._showing:
            self.sandbox.retire()
            self._taught = False

    def _deliver(self, made: tuple[CallOutcome, Stop | None], printed: str) -> CallOutcome:
        outcome, stop = made
        self.ledger.meet(stop)
        self._heard(printed)
        return outcome


def settled_outcome(stop: Stop) -> CallOutcome:
    """What a call settled by ``stop`` returns, without being made: the timeout or the crash it had."""
    return replace(stop.outcome, value=None, args_after=(), reached=(), seconds=None)


def nbytes(value) -> int:
    """Bytes of the arrays in a value (tuples, lists and dicts of them)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(nbytes(item) for item in value)
    if isinstance(value, dict):
        return sum(nbytes(item) for item in value.values())
    return 0


def reply_limit_of(case: Case) -> int:
    """The most bytes of arrays the reply to ``case``'s call may hold, sized from the value it expects (kept in
    the case's memo: a grading asks it about 150 times, for a few dozen cases whose arrays keep their sizes)."""
    # a copy of the case (``dataclasses.replace``) shares its memo: the key names the very values sized
    key = ("reply_limit", id(case.args), id(case.kwargs), id(case.calls), id(case.expected))
    limit = case._memo.get(key)
    if limit is None:
        inputs = nbytes((case.args, case.kwargs, case.calls))
        expected = nbytes(case.expected)
        limit = case._memo[key] = (REPLY_FACTOR * expected + inputs if expected else REPLY_FACTOR * inputs) + REPLY_ROOM
    return limit


def _described(value):
    if isinstance(value, np.ndarray):
        return ForeignObject(f"array of shape {value.shape}, {value.nbytes:,} bytes: more than the grader keeps "
                             "of one submission")
    if isinstance(value, tuple):
        return tuple(_described(item) for item in value)
    if isinstance(value, list):
        return [_described(item) for item in value]
    return value


def construction_of(case: Case) -> tuple | None:
    """The instance a case's call builds first, as ``(class, init)``; None for a module function."""
    return (case.class_name, tuple(case.init or ())) if case.class_name is not None else None


def construction_request(class_name: str, init: tuple) -> tuple[dict, tuple, dict]:
    """The worker request that only builds ``class_name(*init)``."""
    return {"class": class_name, "init": list(init), "attributes": {}, "method": None}, (), {}


def request_of(case: Case) -> tuple[dict, tuple, dict]:
    """The worker request ``(target, args, kwargs)`` that evaluates ``case``."""
    if case.class_name is not None:
        target = {"class": case.class_name, "init": list(case.init or ()), "attributes": case.weights or {},
                  "method": None if case.calls is not None else case.function}
        if case.calls is not None:
            target["calls"] = [list(step) for step in case.calls]
        return target, case.args, case.kwargs
    return {"function": case.function}, case.args, case.kwargs
