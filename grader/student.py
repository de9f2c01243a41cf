"""The student's code as the trusted side sees it: calls through the sandbox.

Every call goes to the worker; replies are cached per case, so several checks
of one case cost one round trip.
"""

from __future__ import annotations

from grader.cases import Case
from grader.sandbox import CallOutcome, Sandbox

CLASS_NAME = "MultiHeadAttention"
METHODS = ("split_heads", "combine_heads", "forward")


class StudentCode:
    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self._cache: dict[str, CallOutcome] = {}

    def invoke(self, case: Case) -> CallOutcome:
        """The student's value for ``case`` (cached by case id)."""
        if case.id not in self._cache:
            if case.class_name is not None:
                self._cache[case.id] = self.sandbox.call_method(
                    case.class_name, init=case.init or (), attributes=case.weights or {},
                    method=None if case.calls is not None else case.function, args=case.args, kwargs=case.kwargs,
                    **({"calls": case.calls} if case.calls is not None else {}))
            else:
                self._cache[case.id] = self.call(case.function, *case.args, d_model=case.d_model,
                                                 heads=case.heads, weights=case.weights, **case.kwargs)
        return self._cache[case.id]

    def call(self, function: str, *args, d_model: int | None = None, heads: int | None = None,
             weights: dict | None = None, **kwargs) -> CallOutcome:
        """Call ``function`` (a module function or a method of a fresh instance)."""
        if function in METHODS:
            return self.sandbox.call_method(CLASS_NAME, init=(d_model, heads), attributes=weights or {},
                                            method=function, args=args, kwargs=kwargs)
        return self.sandbox.call(function, *args, **kwargs)

    def construct(self, d_model: int, heads: int) -> CallOutcome:
        """Only build ``MultiHeadAttention(d_model, heads)``."""
        return self.sandbox.call_method(CLASS_NAME, init=(d_model, heads))
