"""Which of the student's own functions a call entered, in first-entry order (standard library only).

The worker records, for every call, the names of the submission's top-level
functions and class methods that ran while serving it, e.g.
``["forward", "split_heads", "scaled_dot_product_attention", "softmax"]``.
The trusted side uses the list only for hints and for deciding which checks a
hang affects, never for a score: student code can hide from the recorder or
lie through it.

Once the submission is loaded, each of those functions is replaced by a thin
wrapper that notes its name and calls it (``functools.wraps`` keeps its name,
signature and ``__wrapped__``). That costs one extra Python call per entry
into the student's own functions, and nothing anywhere else; a profile hook
(``sys.setprofile``) would slow every call NumPy makes as well. A reference
to a function taken before loading ended (a default argument, a dict of
helpers) is not wrapped, so its entries go unrecorded.
"""

from __future__ import annotations

import contextlib
import functools
import types

NAME_LIMIT = 100  # names kept per call


class Recorder:
    """Notes the entries into the wrapped functions while a call is being recorded."""

    def __init__(self):
        self.reached: list[str] | None = None  # the current call's names; None between calls
        self.notify = None  # told each newly entered name, during the current call

    def enter(self, name: str, _limit=NAME_LIMIT, _len=len) -> None:
        reached = self.reached
        if reached is not None and name not in reached and _len(reached) < _limit:
            reached.append(name)
            if self.notify is not None:
                self.notify(name)

    @contextlib.contextmanager
    def call(self, notify=None):
        """Record one call: yields the list of names it enters."""
        self.reached, self.notify = [], notify
        try:
            yield self.reached
        finally:
            self.reached, self.notify = None, None

    def instrument(self, namespace: dict, filenames) -> list[str]:
        """Wrap the submission's top-level functions and the methods of its classes; return their names.

        A function counts when it was compiled from one of ``filenames`` (the
        submission's cells), so names imported from NumPy do not. Methods are
        named by their attribute (``forward``); a top-level name bound to a
        ``functools.partial`` of one of the submission's functions is wrapped
        under that name (``softmax = partial(_normalise, axis=-1)``); static and class methods and
        properties are wrapped inside their descriptor. A class that refuses
        new attributes keeps its methods as they are.
        """
        names = []
        for name, value in list(namespace.items()):
            if _own(value, filenames) or _own(_bound(value), filenames):
                namespace[name] = self._wrapped(value, name)
                names.append(name)
            elif isinstance(value, type) and value.__module__ == namespace.get("__name__"):
                for attribute, member in list(vars(value).items()):
                    replacement = self._member(member, attribute, filenames)
                    if replacement is not None:
                        try:
                            setattr(value, attribute, replacement)
                            names.append(attribute)
                        except (AttributeError, TypeError):
                            pass
        return list(dict.fromkeys(names))

    def _member(self, member, name: str, filenames):
        if _own(member, filenames):
            return self._wrapped(member, name)
        if type(member) in (staticmethod, classmethod) and _own(member.__func__, filenames):
            return type(member)(self._wrapped(member.__func__, name))
        if type(member) is property and any(_own(part, filenames) for part in (member.fget, member.fset, member.fdel)):
            parts = [self._wrapped(part, name) if _own(part, filenames) else part
                     for part in (member.fget, member.fset, member.fdel)]
            return property(*parts, member.__doc__)
        return None

    def _wrapped(self, function, name: str):
        enter, name = self.enter, str(name)[:NAME_LIMIT]

        @functools.wraps(function)
        def recorded(*args, **kwargs):
            enter(name)
            return function(*args, **kwargs)

        return recorded


def _bound(value, _depth=4):
    """The function a ``functools.partial`` (of a partial ...) calls, else None: ``softmax =
    partial(_normalise, axis=-1)`` makes ``softmax`` one of the student's functions for the record."""
    while _depth and type(value) is functools.partial:
        value, _depth = value.func, _depth - 1
    return value if type(value) is types.FunctionType else None


def _own(value, filenames) -> bool:
    return type(value) is types.FunctionType and value.__code__.co_filename in filenames
