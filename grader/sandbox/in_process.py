"""An in-process stand-in for the sandbox, for measuring the sandbox's cost only.

It imports the submission into the grader's own process, which the trust
boundary forbids for real grading: use it in benchmarks on trusted code, never
on student submissions.
"""

from __future__ import annotations

import copy
import importlib.util
from dataclasses import replace
from pathlib import Path

import numpy as np

from grader.sandbox.client import CallError, CallOutcome, Limits
from grader.sandbox.codec import ForeignObject
from grader.sandbox.worker.recording import Recorder
from grader.sandbox.worker.standins import Missing, StandIns


class InProcessBox:
    """Same calls as ``grader.sandbox.client.Sandbox``, evaluated in this process."""

    isolation = "none (in-process, for benchmarks only)"
    limits = Limits()
    budget_left = float("inf")  # no call is timed here
    worker = "this process"  # always there: prefetching asks it, and it answers each call on its own
    restarts = 0

    def isolation_in(self, lang: str) -> str:
        from grader.sandbox.isolation import in_process_isolation

        return in_process_isolation(lang)

    def __init__(self, module):
        self.module = module
        filename = getattr(module, "__file__", None)
        self.recorder = Recorder()
        self.recorder.instrument(vars(module), {filename} if filename else set())

    @classmethod
    def load(cls, path: Path, *, name: str | None = None) -> InProcessBox:
        """Import the file at ``path`` as module ``name`` (exceptions propagate) and wrap it."""
        spec = importlib.util.spec_from_file_location(name or f"unsandboxed_{Path(path).stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        box = cls(module)
        box.loaded_from = (path, name)
        return box

    loaded_from = None  # (path, name) that ``load`` imported, for ``retire``

    def retire(self) -> None:
        """As ``Sandbox.retire``: the calls after this one meet the submission imported afresh."""
        if self.loaded_from is not None:
            path, name = self.loaded_from
            fresh = type(self).load(path, name=name)
            self.module, self.recorder = fresh.module, fresh.recorder

    def call(self, function: str, *args, **kwargs) -> CallOutcome:
        return self._run(lambda a: getattr(self.module, function)(*a, **kwargs), args)

    def call_method(self, class_name: str, *, init: tuple = (), attributes: dict | None = None,
                    method: str | None = None, args: tuple = (), kwargs: dict | None = None) -> CallOutcome:
        def run(arguments):
            instance = getattr(self.module, class_name)(*init)
            for name, value in (attributes or {}).items():
                setattr(instance, name, value.copy())
            return getattr(instance, method)(*arguments, **(kwargs or {})) if method else None
        return self._run(run, args)

    def run(self, target: dict, args: tuple = (), kwargs: dict | None = None, **limits) -> CallOutcome:
        """A request target as ``grader.grading.student.request_of`` builds it (``limits`` are not enforced here)."""
        if target.get("stand_ins") is not None:
            return self._stood_in(target, args, kwargs)
        if "class" not in target:
            return self.call(target["function"], *args, **(kwargs or {}))
        if target.get("calls") is not None:
            return self._run(lambda a: self._steps(target), args)
        return self.call_method(target["class"], init=tuple(target.get("init", ())),
                                attributes=target.get("attributes"), method=target.get("method"), args=args,
                                kwargs=kwargs)

    def call_batch(self, calls, **limits) -> None:
        return None  # nothing to save in one process: each call is made on its own

    def output_size(self) -> int:
        return 0  # what the submission prints goes to this process's own output, not kept apart

    def output_since(self, offset: int, limit: int = 4000) -> str:
        return ""

    def _steps(self, target: dict):
        instance = getattr(self.module, target["class"])(*target.get("init", ()))
        for name, value in (target.get("attributes") or {}).items():
            setattr(instance, name, value.copy())
        results = []
        for path, step_args, step_kwargs in target["calls"]:
            value = instance
            for name in str(path).split("."):
                value = getattr(value, name)
            results.append(value if step_args is None else value(*copy.deepcopy(step_args), **(step_kwargs or {})))
        return tuple(results)

    def _stood_in(self, target: dict, args: tuple, kwargs: dict | None) -> CallOutcome:
        """The call with the worker's stand-ins in place (``grader.sandbox.worker.standins``), as it makes it."""
        stand_ins = StandIns(np, target["stand_ins"])
        namespace = vars(self.module)

        def run(arguments):
            stand_ins.install(namespace)
            if "class" not in target:
                return namespace[target["function"]](*arguments, **(kwargs or {}))
            instance = namespace[target["class"]](*target.get("init", ()))
            for name, value in (target.get("attributes") or {}).items():
                setattr(instance, name, value.copy())
            stand_ins.install_methods(instance)
            return getattr(instance, target["method"])(*arguments, **(kwargs or {}))

        try:
            outcome = self._run(run, args, stopped=Missing)
        finally:
            stand_ins.restore(namespace)
        used = tuple(sorted(stand_ins.used))
        if stand_ins.missing is not None:
            name, given = stand_ins.missing
            return CallOutcome(value=_plain(given), missing=name, stood_in=used, reached=outcome.reached)
        return replace(outcome, stood_in=used)

    def _run(self, function, args, stopped=()) -> CallOutcome:
        arguments = tuple(copy.deepcopy(a) for a in args)
        with self.recorder.call() as reached:
            try:
                with np.errstate(all="ignore"):
                    value = function(arguments)
            except stopped:
                return CallOutcome(reached=tuple(reached))  # a stand-in with no answer ended the call
            except Exception as error:  # noqa: BLE001 - reported like the worker does
                return CallOutcome(error=CallError(type(error).__name__, str(error)), reached=tuple(reached))
        return CallOutcome(value=_plain(value), args_after=arguments, reached=tuple(reached))


def _plain(value):
    if type(value) is np.ndarray:
        return value.copy()
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    if value is None or type(value) in (bool, int, float, str):
        return value
    return ForeignObject(type(value).__name__)
