"""Code as normalized tokens: what a copy keeps when its author disguises it.

Python's own tokenizer (``tokenize``) reads the text; it never runs it. Then:

- comments, blank lines, line continuations and docstrings (a statement that
  is only a string) are dropped, so changing them hides nothing;
- an identifier the student chose (a variable, a parameter, a helper, an
  attribute of their own) becomes one symbol, ``V``, so renaming hides nothing;
- what a student cannot rename stays itself: keywords, builtins, NumPy's
  names after a dot (``.reshape``, ``np.exp``), and the exercise's own API
  names (``split_heads``, ``W_Q``) read from the stub;
- string literals become ``S``; numbers and operators stay as written;
- before all this, statements are put in one canonical form
  (``grader.similarity.canonical``: temporaries inlined, append loops as
  comprehensions, one-line helpers put where they are called), so moving code
  between statements or functions hides nothing;
- the code is cut into units, one per function or method (top-level statements
  between them make units of their own), each fingerprinted on its own, so
  moving functions around hides nothing either.

copydetect's own filter (pygments) turns every name into ``V``, ``np.exp``
and ``x.reshape`` included, which makes any two softmax functions look alike,
and keeps docstrings as tokens; hence this normalization of our own.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import io
import keyword
import tokenize
from dataclasses import dataclass

from grader.similarity.canonical import canonical, find_helpers, numpy_names, parse

NAME_SYMBOL, STRING_SYMBOL = "V", "S"
NEWLINE_SYMBOL, INDENT_SYMBOL, DEDENT_SYMBOL = "\u23ce", "\u2192", "\u2190"
MAX_TOKENS = 60_000  # per submission; a file past this is compared on its first MAX_TOKENS tokens
# NumPy's keyword arguments (``axis=-1``, ``keepdims=True``): names the library fixes, as its functions are
NUMPY_KEYWORDS = frozenset({"axis", "axes", "keepdims", "dtype", "out", "optimize", "order", "copy", "initial",
                            "where", "casting", "ddof", "subscripts", "indices_or_sections", "newshape", "shape"})
_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+: f-strings come in parts
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


@dataclass(frozen=True)
class Token:
    text: str  # normalized
    cell: int  # index of the cell it is in (0 for a script)
    line: int  # 1-based, in that cell
    unit: int  # index of its unit in the document
    last_line: int = 0  # the last line of the statement it is in, where the canonical form joined several; 0: line


@dataclass(frozen=True)
class Unit:
    name: str  # "softmax", "MultiHeadAttention.split_heads", or "" for top-level statements
    start: int  # index of its first token in the document
    end: int  # one past its last


@dataclass(frozen=True)
class Tokens:
    tokens: tuple[Token, ...]
    units: tuple[Unit, ...]


@functools.cache
def library_names() -> frozenset[str]:
    """Names after a dot that belong to NumPy or Python (``np.exp``, ``x.reshape``): a copier cannot rename them."""
    import math

    import numpy

    names = set(dir(numpy)) | set(dir(numpy.ndarray)) | set(dir(numpy.linalg)) | set(dir(math))
    names |= set(dir(numpy.random)) | set(dir(numpy.random.Generator))  # rng = np.random.default_rng(0); rng.normal
    names |= set(dir(list)) | set(dir(dict)) | set(dir(str))
    for module in ("functools", "itertools", "operator"):
        names |= set(dir(importlib.import_module(module)))
    return frozenset(name for name in names | NUMPY_KEYWORDS if not name.startswith("_"))


@functools.cache
def api_names(stub_text: str) -> frozenset[str]:
    """The names the exercise fixes: its functions, classes, methods and the attributes the stub sets."""
    try:
        tree = ast.parse(stub_text)
    except SyntaxError:
        return frozenset()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
    return frozenset(name for name in names if not name.startswith("__"))


def normalize(cells: tuple[str, ...] | list[str], *, api: frozenset[str] = frozenset()) -> Tokens:
    """The normalized tokens of a document's cells (one cell for a script), cut into units."""
    reader = _Reader(api)
    trees = [parse(text) for text in cells]
    reader.helpers = find_helpers(trees, keep=api)
    reader.numpy = numpy_names(trees)
    for index, (text, tree) in enumerate(zip(cells, trees)):
        reader.read(text, cell=index, tree=tree)
        if len(reader.tokens) >= MAX_TOKENS:
            break
    return reader.finish()


def _keyword_arguments(line: list) -> list:
    """``axis=-1`` in a call keeps ``axis``: NumPy fixes the name, not the student."""
    kept = list(line)
    for index in range(1, len(line) - 1):
        text, raw, number = line[index]
        if raw in NUMPY_KEYWORDS and line[index + 1][1] == "=" and line[index - 1][1] in ("(", ","):
            kept[index] = (raw, raw, number)
    return kept


class _Reader:
    """Reads cells one logical line at a time, keeping a line only once it is known not to be a docstring."""

    def __init__(self, api: frozenset[str]):
        self.keep = api
        self.helpers: dict = {}  # the document's one-line helpers (grader.similarity.canonical.find_helpers)
        self.numpy = frozenset({"np"})  # the names it imports NumPy as
        self.library = library_names()
        self.builtin = frozenset(dir(builtins))
        self.tokens: list[Token] = []
        self.units: list[Unit] = []
        self.unit_name: str | None = None  # None: no unit open; "": top-level statements
        self.unit_start = 0
        self.decorators_only = False  # the open unit holds only decorators so far
        self.classes: list[tuple[int, str]] = []  # (depth, qualified name) of the classes we are inside
        self.depth = 0

    def read(self, text: str, *, cell: int, tree=None) -> None:
        form = canonical(text, helpers=self.helpers, tree=tree, numpy=self.numpy)
        self.original = form.original
        text = form.text
        self.depth = 0
        line: list[tuple[str, str, int]] = []  # (normalized, raw, line number) of the logical line so far
        prefix: list[tuple[str, str, int]] = []  # its INDENT / DEDENT
        previous = None
        fstring = 0
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                kind, value, row = token.type, token.string, token.start[0]
                if kind in _DROPPED:
                    continue
                if fstring:  # inside an f-string of Python 3.12+: one S for all of it
                    fstring += (kind == _FSTRING_START) - (kind == _FSTRING_END)
                    continue
                if kind == tokenize.INDENT:
                    self.depth += 1
                    prefix.append((INDENT_SYMBOL, "", row))
                elif kind == tokenize.DEDENT:
                    self.depth -= 1
                    prefix.append((DEDENT_SYMBOL, "", row))
                elif kind == tokenize.NEWLINE:
                    self._logical_line(line, prefix, cell, row)
                    line, prefix = [], []
                elif kind == _FSTRING_START:
                    fstring = 1
                    line.append((STRING_SYMBOL, value, row))
                else:
                    line.append((self._symbol(kind, value, previous), value, row))
                previous = value if kind == tokenize.OP else None
                if len(self.tokens) >= MAX_TOKENS:
                    break
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass  # what was read up to the broken part is still compared
        if line:
            self._logical_line(line, prefix, cell, line[-1][2])
        self._close_unit()
        self.classes = []

    def _symbol(self, kind: int, value: str, previous: str | None) -> str:
        if kind == tokenize.NAME:
            if keyword.iskeyword(value) or value in self.keep or (value.startswith("__") and value.endswith("__")):
                return value
            if previous == ".":
                return value if value in self.library else NAME_SYMBOL
            return value if value in self.builtin else NAME_SYMBOL
        if kind == tokenize.STRING:
            return STRING_SYMBOL
        return value

    def _logical_line(self, line: list, prefix: list, cell: int, row: int) -> None:
        if not line or all(text == STRING_SYMBOL for text, _, _ in line):
            return  # a docstring, or a string standing alone: as good as a comment
        while self.classes and self.classes[-1][0] >= self.depth:
            self.classes.pop()
        first = line[0][1]
        if first == "@":
            if not self.decorators_only:
                self._open("")
                self.decorators_only = True
            prefix = []
        elif first in ("def", "class", "async"):
            name = self._qualified(line)
            if self.decorators_only:
                self.unit_name = name
            else:
                self._open(name)
            self.decorators_only = False
            if first == "class":
                self.classes.append((self.depth, name))
            prefix = []  # where a function sits (its indent) does not matter
        elif self.unit_name is None or (self.depth == 0 and self.unit_name):
            self._open("")
            prefix = []
        line = _keyword_arguments(line)
        for text, _, number in prefix + line:
            first, last = self.original(number)
            self.tokens.append(Token(text, cell, first, len(self.units), last))
        first, last = self.original(row)
        self.tokens.append(Token(NEWLINE_SYMBOL, cell, first, len(self.units), last))

    def _qualified(self, line: list) -> str:
        raws = [raw for _, raw, _ in line]
        for index, raw in enumerate(raws[:-1]):
            if raw in ("def", "class"):
                return ".".join([name for _, name in self.classes[-1:]] + [raws[index + 1]])
        return "?"

    def _open(self, name: str) -> None:
        self._close_unit()
        self.unit_name = name
        self.decorators_only = False

    def _close_unit(self) -> None:
        if self.unit_name is not None and len(self.tokens) > self.unit_start:
            self.units.append(Unit(self.unit_name, self.unit_start, len(self.tokens)))
        self.unit_name = None
        self.unit_start = len(self.tokens)
        self.decorators_only = False

    def finish(self) -> Tokens:
        self._close_unit()
        return Tokens(tuple(self.tokens[:MAX_TOKENS]), tuple(self.units))
