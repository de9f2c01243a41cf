"""The student's code as the trusted side sees it: calls through the sandbox.

Every call goes to the worker; replies are cached per case, so several checks
of one case cost one round trip, and ``prefetch`` asks for many cases in a
single exchange. What a call printed is kept with it, so feedback can show a
student's ``print`` output under the check whose call produced it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.grading.case import Case

if TYPE_CHECKING:  # annotations only: the proxy is handed an open sandbox
    from grader.sandbox.client import CallOutcome, Sandbox


PRINTED_LIMIT = 2000  # bytes of one call's printed output kept


class StudentCode:
    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self._cache: dict[str, CallOutcome] = {}
        self._printed: dict[str, str] = {}  # case id -> what its call printed
        self._check_printed: list[str] | None = None  # what the calls of the running check printed

    def invoke(self, case: Case) -> CallOutcome:
        """The student's value for ``case`` (cached by case id)."""
        if case.id not in self._cache:
            target, args, kwargs = request_of(case)
            self._cache[case.id], self._printed[case.id] = self._measured(lambda: self.sandbox.run(target, args, kwargs))
        self._heard(self._printed.get(case.id, ""))
        return self._cache[case.id]

    def prefetch(self, cases) -> None:
        """Ask for every case not yet cached in one exchange; on any trouble, leave them to ``invoke``.

        A batch's output cannot be told apart call by call: when it printed anything, its replies are
        dropped and the calls made again one by one, so each check shows what its own call printed.
        """
        missing = [case for case in cases if case.id not in self._cache]
        before = self._output_size()
        outcomes = self.sandbox.call_batch([request_of(case) for case in missing]) if missing else None
        if outcomes is not None and self._output_size() != before:
            return
        for case, outcome in zip(missing, outcomes or ()):
            if not outcome.timed_out:
                self._cache[case.id] = outcome

    # ---- printed output ---------------------------------------------------------------------
    def begin_check(self) -> None:
        """Start collecting what the calls of one check print."""
        self._check_printed = []

    def end_check(self) -> str:
        """What the calls of the check begun last printed, in call order, each call's output once."""
        printed, self._check_printed = self._check_printed or [], None
        return "".join(dict.fromkeys(text for text in printed if text))

    def _measured(self, run) -> tuple[CallOutcome, str]:
        before = self._output_size()
        outcome = run()
        after = self._output_size()
        if after <= before:
            return outcome, ""  # nothing printed, or a fresh worker (whose output is not this call's alone)
        since = getattr(self.sandbox, "output_since", None)
        return outcome, since(before, min(after - before, PRINTED_LIMIT)) if since else ""

    def _heard(self, text: str) -> None:
        if self._check_printed is not None and text:
            self._check_printed.append(text)

    def _output_size(self) -> int:
        size = getattr(self.sandbox, "output_size", None)  # an in-process stand-in has no separate output
        return size() if size else 0

    # ``call`` and ``construct`` are never cached: checks use them for one-off inputs.
    def call(self, function: str, *args, like: Case | None = None, **kwargs) -> CallOutcome:
        """Call ``function`` on new inputs: a module function, or a method of a fresh
        instance built and set up the way ``like``'s instance is."""
        if like is not None and like.class_name is not None:
            run = lambda: self.sandbox.call_method(like.class_name, init=like.init or (),  # noqa: E731
                                                   attributes=like.weights or {}, method=function, args=args,
                                                   kwargs=kwargs)
        else:
            run = lambda: self.sandbox.call(function, *args, **kwargs)  # noqa: E731
        outcome, printed = self._measured(run)
        self._heard(printed)
        return outcome

    def construct(self, class_name: str, *init) -> CallOutcome:
        """Only build ``class_name(*init)``."""
        outcome, printed = self._measured(lambda: self.sandbox.call_method(class_name, init=init))
        self._heard(printed)
        return outcome


def request_of(case: Case) -> tuple[dict, tuple, dict]:
    """The worker request ``(target, args, kwargs)`` that evaluates ``case``."""
    if case.class_name is not None:
        target = {"class": case.class_name, "init": list(case.init or ()), "attributes": case.weights or {},
                  "method": None if case.calls is not None else case.function}
        if case.calls is not None:
            target["calls"] = [list(step) for step in case.calls]
        return target, case.args, case.kwargs
    return {"function": case.function}, case.args, case.kwargs
