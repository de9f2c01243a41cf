"""Stand-ins for a submission's own functions during one call (standard library and the NumPy given).

To judge one function of a submission apart from the ones it calls (an
attention whose softmax is broken may have a mistake of its own that the
softmax hides), the trusted side asks for a call with some of the
submission's functions stood in for: a module-level function, or a method of
the instance the call is made on. A stand-in holds no code of the right
answer. It answers from a table the trusted side sent, ``[[args, value],
...]``: the value the reference gives for those exact arguments. Called with
arguments the table does not hold, it notes them (the first such call only)
and raises ``Missing``, which ends the call: the trusted side computes the
answer, adds it to the table and asks again. A call whose stand-ins were all
answered is the submission's function with right callees, computed in the
worker like any other call; nothing here changes a score.

Student code can reach a stand-in and call it with anything: it learns the
reference's value for any input it chooses, the hidden checks' ones included.
So the trusted side never grades a call in a worker that stand-ins answered:
the next such call goes to a fresh worker (``StudentCode._fresh``).
"""

from __future__ import annotations

MAX_STAND_INS = 8  # names stood in for in one call
MAX_ENTRIES = 32  # answers per stand-in


class Missing(BaseException):
    """A stand-in was asked for a value its table does not hold (a BaseException: ``except Exception`` in
    student code does not swallow it)."""


class StandIns:
    """The stand-ins of one call: ``specs`` is ``[[name, kind, [[args, value], ...]], ...]`` as decoded,
    ``kind`` "function" (a module-level name) or "method" (an attribute of the instance)."""

    def __init__(self, numpy, specs):
        self.numpy = numpy
        self.tables = {}
        for spec in list(specs)[:MAX_STAND_INS]:
            name, kind, pairs = spec
            if type(name) is str and kind in ("function", "method") and type(pairs) is list:
                self.tables[name] = (kind, [tuple(pair) for pair in pairs[:MAX_ENTRIES] if len(pair) == 2])
        self.used = {}  # name -> how many times the call used it
        self.missing = None  # (name, args) of the first call with no answer
        self._saved = {}

    def install(self, namespace):
        """Put the module-level stand-ins in ``namespace``, the old values kept for ``restore``."""
        for name, (kind, _) in self.tables.items():
            if kind == "function":
                self._saved[name] = namespace.get(name, _ABSENT)
                namespace[name] = self._stand_in(name)

    def install_methods(self, instance, _setattr=setattr):
        """Put the method stand-ins on ``instance`` (its own attributes: they hide the class's methods)."""
        for name, (kind, _) in self.tables.items():
            if kind == "method":
                _setattr(instance, name, self._stand_in(name))

    def restore(self, namespace):
        for name, value in self._saved.items():
            if value is _ABSENT:
                namespace.pop(name, None)
            else:
                namespace[name] = value
        self._saved = {}

    def _stand_in(self, name):
        _, pairs = self.tables[name]
        used, ndarray = self.used, self.numpy.ndarray
        # what the stand-in uses is bound now, outside student code: builtins it rebinds later are not seen
        _type, _len, _zip, _tuple, _list = type, len, zip, tuple, list

        def copied(value):
            if _type(value) is ndarray:
                return value.copy()
            if _type(value) in (_tuple, _list):
                return _type(value)(copied(item) for item in value)
            return value

        def same(given, args) -> bool:
            """``args`` are exactly ``given``: as many, each an array of the same type, shape and bytes."""
            if _type(given) not in (_list, _tuple) or _len(given) != _len(args):
                return False
            for want, got in _zip(given, args):
                if _type(want) is not ndarray or _type(got) is not ndarray:
                    return False
                if want.dtype != got.dtype or want.shape != got.shape or want.tobytes() != got.tobytes():
                    return False
            return True

        def stand_in(*args, **kwargs):
            used[name] = used.get(name, 0) + 1
            if not kwargs:
                for given, value in pairs:
                    if same(given, args):
                        return copied(value)
            if self.missing is None:
                self.missing = (name, _tuple(copied(arg) for arg in args) if not kwargs else None)
            raise Missing(name)

        stand_in.__name__ = stand_in.__qualname__ = name
        return stand_in


_ABSENT = object()
