"""What a hang or a crash settles: each costs one short timeout, and only the checks that depend on it.

The ledger of one submission keeps, from what the worker recorded of each
call (``CallOutcome.reached``, the student's own functions it entered):

- the functions that have **stopped**: a call of theirs overran its limit or
  ended the worker. They are not called again; every later call of theirs is
  settled at once with the same outcome, so a function hangs once however many
  checks it has. A call that stops in a function already stopped (it entered
  it, and that function is the one that hung before) is that function's hang
  too: the caller is settled with it as the root cause.
- the functions some call has **returned** from. A call that enters a stopped
  function that has never returned is stopped on entry, without waiting for
  its deadline (it would hang there); one that has returned on other inputs
  hangs only for some, so its callers run and are held to their own limits.
- the **constructions** that hung, by class and constructor arguments: every
  method call that needs one is settled without building it again.

Which functions depend on which is never taken from a fixed table: a student
whose ``forward`` does not call their own ``softmax`` is not blamed for it.
What the worker records is untrusted; lying through it can only cost the
submission itself its own points.

The ledger also tells the runner which stops the current check ran into, and
words the message: the first check to meet a stop says what hung and its limit,
the others name that check.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from grader.content.messages import CheckName, Message
from grader.sandbox.endings import CRASH, TIMEOUT

CONSTRUCTOR = "__init__"


@dataclass
class Stop:
    """A function that hung or ended the worker, and where it was first reported."""

    function: str
    kind: str  # "timeout" or "crash"
    limit: float | None = None  # the call limit it overran, seconds
    reason: str = ""  # why the worker ended, for a crash
    first_check: str | None = None  # the first check that reported it
    outcome: object = None  # the CallOutcome of the call that stopped: what every settled call returns


@dataclass
class Ledger:
    """The stops of one submission and what each call recorded (see the module's docstring)."""

    stopped: dict = field(default_factory=dict)  # function -> the Stop it is settled by (its own or a callee's)
    returned: set = field(default_factory=set)  # functions some call returned from
    calls: dict = field(default_factory=dict)  # function -> other functions its calls entered
    constructions: dict = field(default_factory=dict)  # (class, init) -> the Stop of building it
    built: set = field(default_factory=set)  # (class, init) that some call built and came back from
    check: str | None = None  # the check running now
    met: list = field(default_factory=list)  # Stops the current check ran into, in order (the last ended it)

    def begin(self, check: str) -> None:
        self.check, self.met = check, []

    def settled(self, function: str, construction: tuple | None = None) -> Stop | None:
        """The stop that settles a call of ``function`` (building ``construction`` first), or None: make it."""
        if function in self.stopped:
            return self.stopped[function]
        return self.constructions.get(construction) if construction is not None else None

    def stop_on(self) -> frozenset:
        """Functions whose entry stops a call at once: stopped, and never returned from."""
        return frozenset(name for name in self.stopped if name not in self.returned)

    def record(self, function: str, outcome, *, construction: tuple | None = None, limit: float | None = None,
               budget_left: float = 1.0) -> tuple[object | None, Stop | None]:
        """Learn from one call's outcome (a ``CallOutcome``); returns what the check gets (None: what the
        stop settles it with, see ``grader.grading.student.settled_outcome``) and the stop, if any."""
        reached = tuple(outcome.reached)
        error = outcome.error
        for name in reached:
            if name != function:
                self.calls.setdefault(function, set()).add(name)
        if outcome.stopped_at is not None:  # it entered a function that hangs
            stop = self.stopped.get(outcome.stopped_at) or Stop(
                outcome.stopped_at, "timeout", limit,
                outcome=replace(outcome, error=replace(error, type="Timeout", message=f"{limit:g}"), ended=TIMEOUT,
                                stopped_at=None))
            self.stopped.setdefault(function, stop)
            return None, stop
        # what the trusted side saw (a deadline it enforced, the worker's end), never the name of an exception
        hung = outcome.ended == TIMEOUT and outcome.seconds is not None and budget_left > 0
        crashed = outcome.ended == CRASH and outcome.seconds is not None
        if not (hung or crashed):
            if outcome.seconds is not None:  # it ran and came back (a value, or an exception of its own)
                self.returned.update((function, *reached))
                if construction is not None:
                    self.built.add(construction)
            return outcome, None
        # The root is the last function it entered that stopped before, unless that is building an instance
        # known to build: a hang far into forward is not the constructor's for having run first.
        suspects = [name for name in reached if name != function and name in self.stopped
                    and not (name == CONSTRUCTOR and construction in self.built)]
        root = suspects[-1] if suspects else None
        if root is not None:
            stop = self.stopped[root]
        else:
            stop = Stop(function, "timeout" if hung else "crash", limit=limit if hung else None,
                        reason="" if hung else error.message, outcome=outcome)
        self.stopped.setdefault(function, stop)
        if function == CONSTRUCTOR and construction is not None:
            self.constructions[construction] = stop
        return (None if root is not None else outcome), stop

    def meet(self, stop: Stop | None) -> None:
        """The current check received an outcome settled by ``stop``."""
        if stop is not None and self.check is not None:
            self.met.append(stop)

    def explain(self, function: str) -> tuple[list[Message], str | None] | None:
        """The messages and root cause of the current check of ``function``, if a stop ended it."""
        if not self.met:
            return None
        stop = self.met[-1]  # the stop the check ended on
        own = stop.function == function
        params = {"function": function, "root": stop.function}
        if stop.first_check is None or stop.first_check == self.check:
            stop.first_check = self.check
            if stop.kind == "timeout":
                first = Message("timeout", {"function": function, "limit": f"{stop.limit:g}"}) if own else \
                    Message("hung_upstream_first", params | {"limit": f"{stop.limit:g}"})
            else:
                first = Message("worker_gone", {"function": function, "reason": stop.reason}) if own else \
                    Message("crashed_upstream_first", params | {"reason": stop.reason})
            messages = [first, Message("settled_rest", {"root": stop.function})]
        else:
            key = ("hung" if stop.kind == "timeout" else "crashed") + ("_settled" if own else "_upstream")
            messages = [Message(key, params | {"check": CheckName(stop.first_check)})]
        return messages, None if own else stop.function
