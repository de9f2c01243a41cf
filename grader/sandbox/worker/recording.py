"""Which of the student's own functions a call entered, in first-entry order (standard library only).

The worker records, for every call, the names of the submission's top-level
functions and class methods that ran while serving it, e.g.
``["forward", "split_heads", "scaled_dot_product_attention", "softmax"]``.
The trusted side uses the list only for hints and for deciding which checks a
hang affects, never for a score: student code can switch the recorder off or
lie through it.

It costs one profile hook per call (``sys.setprofile``, a set lookup per
Python-level call); only code objects defined in the submission's own files
count, so NumPy's internals and helpers nested inside a function do not.
"""

from __future__ import annotations

import sys
import types

NAME_LIMIT = 100  # names kept per call
_setprofile = sys.setprofile  # bound before any student code can replace it


def own_functions(namespace: dict, filenames) -> dict:
    """Map each code object of the submission's top-level functions and class methods to its name.

    A function counts when it was compiled from one of ``filenames`` (the
    submission's cells), so names imported from NumPy do not. Methods are named
    by their attribute name (``forward``), static and class methods and
    properties included.
    """
    codes: dict = {}
    for name, value in list(namespace.items()):
        if type(value) is types.FunctionType:
            _add(codes, value, name, filenames)
        elif isinstance(value, type):
            for attribute, member in list(vars(value).items()):
                for function in _functions_of(member):
                    _add(codes, function, attribute, filenames)
    return codes


def _functions_of(member) -> list:
    if type(member) in (staticmethod, classmethod):
        member = member.__func__
    if type(member) is property:
        return [part for part in (member.fget, member.fset, member.fdel) if type(part) is types.FunctionType]
    return [member] if type(member) is types.FunctionType else []


def _add(codes: dict, function, name: str, filenames) -> None:
    code = function.__code__
    if code.co_filename in filenames and code not in codes:
        codes[code] = str(name)[:NAME_LIMIT]


class CallRecorder:
    """Records the entries into ``codes`` (from ``own_functions``) while active; ``notify`` hears each new name."""

    def __init__(self, codes: dict, notify=None):
        self.reached: list[str] = []
        seen: set[str] = set()
        lookup, remember, append = codes.get, seen.add, self.reached.append

        def profile(frame, event, argument):
            if event == "call":
                name = lookup(frame.f_code)
                if name is not None and name not in seen and len(seen) < NAME_LIMIT:
                    remember(name)
                    append(name)
                    if notify is not None:
                        notify(name)

        self._profile = profile

    def __enter__(self) -> CallRecorder:
        _setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        _setprofile(None)
