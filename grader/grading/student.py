"""The student's code as the trusted side sees it: calls through the sandbox.

Every call goes to the worker; replies are cached per case, so several checks
of one case cost one round trip, and ``prefetch`` asks for many cases in a
single exchange.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.grading.case import Case

if TYPE_CHECKING:  # annotations only: the proxy is handed an open sandbox
    from grader.sandbox.client import CallOutcome, Sandbox


class StudentCode:
    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self._cache: dict[str, CallOutcome] = {}

    def invoke(self, case: Case) -> CallOutcome:
        """The student's value for ``case`` (cached by case id)."""
        if case.id not in self._cache:
            target, args, kwargs = request_of(case)
            self._cache[case.id] = self.sandbox.run(target, args, kwargs)
        return self._cache[case.id]

    def prefetch(self, cases) -> None:
        """Ask for every case not yet cached in one exchange; on any trouble, leave them to ``invoke``."""
        missing = [case for case in cases if case.id not in self._cache]
        outcomes = self.sandbox.call_batch([request_of(case) for case in missing]) if missing else None
        for case, outcome in zip(missing, outcomes or ()):
            if not outcome.timed_out:
                self._cache[case.id] = outcome

    # ``call`` and ``construct`` are never cached: checks use them for one-off inputs.
    def call(self, function: str, *args, like: Case | None = None, **kwargs) -> CallOutcome:
        """Call ``function`` on new inputs: a module function, or a method of a fresh
        instance built and set up the way ``like``'s instance is."""
        if like is not None and like.class_name is not None:
            return self.sandbox.call_method(like.class_name, init=like.init or (), attributes=like.weights or {},
                                            method=function, args=args, kwargs=kwargs)
        return self.sandbox.call(function, *args, **kwargs)

    def construct(self, class_name: str, *init) -> CallOutcome:
        """Only build ``class_name(*init)``."""
        return self.sandbox.call_method(class_name, init=init)


def request_of(case: Case) -> tuple[dict, tuple, dict]:
    """The worker request ``(target, args, kwargs)`` that evaluates ``case``."""
    if case.class_name is not None:
        target = {"class": case.class_name, "init": list(case.init or ()), "attributes": case.weights or {},
                  "method": None if case.calls is not None else case.function}
        if case.calls is not None:
            target["calls"] = [list(step) for step in case.calls]
        return target, case.args, case.kwargs
    return {"function": case.function}, case.args, case.kwargs
