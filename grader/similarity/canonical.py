"""Code in one canonical form, so that rewriting a copy statement by statement hides nothing.

Renaming, comments and layout are undone by the tokens (``grader.similarity.tokens``);
what they cannot undo is a copier moving code between statements. Before it is
tokenized, each cell's code is rewritten (with ``ast``: it is read, never run):

- a temporary assigned in a block of a function is put where it is read
  (before it is assigned again): ``m = x.max(); y = np.exp(x - m)`` and
  ``y = np.exp(x - x.max())`` read the same, so neither inlining a copy's
  variables nor extracting new ones changes it; one read several times is
  put in each place if it is small (``e = np.exp(x); e / e.sum()``);
- a loop whose body only appends to a list just made empty becomes the list
  comprehension it stands for (``out = []; for r in rows: out.append(f(r))`` is
  ``out = [f(r) for r in rows]``), conditions and nested loops included;
- a helper of one ``return`` (``def _scores(Q, K): return Q @ K.T``), found in
  all of a document's cells, is put where it is called and its definition left
  out, so splitting code into helpers or folding them back hides nothing; the
  exercise's own functions (``softmax``) stay calls;
- NumPy's function forms are written as the array's methods and operators
  (``np.sum(x, axis=-1)`` is ``x.sum(axis=-1)``, ``np.matmul(a, b)`` is ``a @ b``);
- what adds nothing to a function's result is left out: a ``print``, a lone
  name, a store to a name the function never reads (a copy padded with them).

The form need not behave as the code does (nothing runs it); it need only be
the same for the disguises of one piece of code, and be computed the same way
for every student. Each line of the rewritten text maps back to the lines of
the statements it came from, so evidence still points into the student's file.
Code that does not parse is rewritten one definition at a time: each that
parses alone is rewritten, the broken one is kept as written.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

_BLOCKS = ("body", "orelse", "finalbody")
_MAX_PASSES = 200  # rewrites per block: far more than any exercise's function needs
MAX_READS, MAX_SIZE = 4, 24  # a temporary read more than once is inlined only where it is small and read few times


@dataclass(frozen=True)
class Canonical:
    text: str  # the rewritten code
    lines: tuple[tuple[int, int], ...]  # for each line of ``text`` (1-based: index 0 is line 1), its span in the original

    def original(self, line: int) -> tuple[int, int]:
        """The original lines (first, last) that line ``line`` of the rewritten text stands for."""
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return (line, line)


def canonical(text: str, *, helpers: dict[str, ast.FunctionDef] | None = None,
              tree: ast.Module | None = None, numpy: frozenset[str] = frozenset({"np"})) -> Canonical:
    """``text`` rewritten to the canonical form; code that does not parse, one function at a time.

    ``helpers`` (``find_helpers`` of the whole document): one-line functions put where they are called;
    ``tree``: ``text`` already parsed (``parse``), rewritten in place; ``numpy``: ``numpy_names`` of the document.
    """
    helpers = helpers or {}
    tree = tree or parse(text)
    if tree is None:
        return _piecewise(text, helpers, numpy)
    try:
        return Canonical(*_rewrite(tree, helpers, numpy))
    except _UNREWRITABLE:
        return _as_written(text)


def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def find_helpers(trees: list[ast.Module | None], *, keep: frozenset[str]) -> dict[str, ast.FunctionDef]:
    """The document's helpers: top-level functions of one ``return`` with plain parameters, not named by the
    exercise (``keep``), called, and only ever called with as many arguments, in every cell that parses."""
    trees = [tree for tree in trees if tree is not None]
    found: dict[str, ast.FunctionDef | None] = {}
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                found[node.name] = node if node.name not in found and _is_helper(node, keep) else None
    helpers = {name: node for name, node in found.items() if node is not None}
    called = set()
    for tree in trees:
        calls = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
                if len(node.args) == len(helpers[node.func.id].args.args) and not node.keywords and not any(
                        isinstance(arg, ast.Starred) for arg in node.args):
                    calls.add(id(node.func))
                    called.add(node.func.id)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in helpers and id(node) not in calls and isinstance(
                    node.ctx, ast.Load):
                helpers.pop(node.id)  # passed around, or called some other way: it stays a function
    return {name: node for name, node in helpers.items() if name in called}  # one never called stays too


def _is_helper(node: ast.FunctionDef, keep: frozenset[str]) -> bool:
    arguments = node.args
    plain = not (arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs
                 or arguments.defaults or node.decorator_list)
    body = [statement for statement in node.body
            if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))]  # docstrings
    return (plain and node.name not in keep and not node.name.startswith("__") and len(body) == 1
            and isinstance(body[0], ast.Return) and body[0].value is not None
            and not any(isinstance(inner, ast.Name) and inner.id == node.name for inner in ast.walk(body[0])))


class _CallsInlined(ast.NodeTransformer):
    """Each call of a helper replaced by its returned expression, the arguments in place of its parameters."""

    def __init__(self, helpers: dict[str, ast.FunctionDef]):
        self.helpers = helpers
        self.depth = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        helper = self.helpers.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if helper is None or len(node.args) != len(helper.args.args) or node.keywords or self.depth > 8:
            return node
        values = dict(zip((argument.arg for argument in helper.args.args), node.args))
        body = next(statement for statement in helper.body if isinstance(statement, ast.Return))
        expression = _Substituted(values).visit(copy.deepcopy(body.value))
        self.depth += 1
        try:
            return self.visit(expression)  # a helper may call another
        finally:
            self.depth -= 1


# NumPy functions that are also the array's methods, with the array first: ``np.sum(x, axis=-1)`` is
# ``x.sum(axis=-1)``; and the ones that are operators: ``np.matmul(a, b)`` is ``a @ b``
METHOD_FORMS = frozenset({"sum", "max", "min", "mean", "std", "var", "prod", "reshape", "transpose", "swapaxes",
                          "argmax", "argmin", "cumsum", "clip", "round", "squeeze", "dot", "any", "all", "copy",
                          "ravel", "amax", "amin"})
OPERATOR_FORMS = {"matmul": ast.MatMult, "add": ast.Add, "subtract": ast.Sub, "multiply": ast.Mult,
                  "divide": ast.Div, "true_divide": ast.Div, "power": ast.Pow}
_SPREAD = frozenset({"reshape", "transpose"})  # x.reshape((a, b)) is x.reshape(a, b)


class _MethodForms(ast.NodeTransformer):
    """NumPy's function forms written as the array's methods and operators, so swapping one for the other
    hides nothing (``numpy``: the names NumPy is imported as in the document)."""

    def __init__(self, numpy: frozenset[str]):
        self.numpy = numpy

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.numpy:
            name = {"amax": "max", "amin": "min"}.get(func.attr, func.attr)
            arguments = node.args
            if arguments and not any(isinstance(argument, ast.Starred) for argument in arguments):
                if name in OPERATOR_FORMS and len(arguments) == 2 and not node.keywords:
                    return ast.BinOp(left=arguments[0], op=OPERATOR_FORMS[name](), right=arguments[1])
                if func.attr in METHOD_FORMS:
                    node = ast.Call(func=ast.Attribute(value=arguments[0], attr=name, ctx=ast.Load()),
                                    args=list(arguments[1:]), keywords=node.keywords)
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in _SPREAD and len(node.args) == 1
                and isinstance(node.args[0], ast.Tuple) and not node.keywords):
            node = ast.Call(func=func, args=list(node.args[0].elts), keywords=[])
        return node


def numpy_names(trees: list[ast.Module | None]) -> frozenset[str]:
    """The names NumPy is imported as in a document's cells (``np`` where it imports none)."""
    names = {alias.asname or alias.name for tree in trees if tree is not None for node in ast.walk(tree)
             if isinstance(node, ast.Import) for alias in node.names if alias.name == "numpy"}
    return frozenset(names or {"np"})


class _Substituted(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return copy.deepcopy(self.values[node.id])
        return node


_UNREWRITABLE = (RecursionError, ValueError, TypeError, AttributeError, SyntaxError)
_OPENERS = ("def ", "async def ", "class ", "@")


def _as_written(text: str, *, first: int = 1) -> Canonical:
    count = len(text.splitlines())
    return Canonical(text, tuple((number, number) for number in range(first, first + count)))


def _piecewise(text: str, helpers: dict[str, ast.FunctionDef], numpy: frozenset[str]) -> Canonical:
    """Code that does not parse, cut before every definition (at any depth) and top-level statement: each piece
    that parses alone is rewritten (indented back where it was), the others kept as written."""
    lines = text.splitlines()
    cuts = [index for index, line in enumerate(lines)
            if line.lstrip().startswith(_OPENERS) or (line[:1] not in ("", " ", "\t", "#", ")", "]", "}"))]
    cuts = sorted({0, *cuts})
    texts, spans = [], []
    for start, end in zip(cuts, cuts[1:] + [len(lines)]):
        piece = lines[start:end]
        indent = piece[0][:len(piece[0]) - len(piece[0].lstrip())]
        if all(not line.strip() or line.startswith(indent) for line in piece):
            try:
                rewritten, lines_of = _rewrite(ast.parse("\n".join(line[len(indent):] for line in piece)), helpers, numpy)
                texts.extend(indent + line if line else line for line in rewritten.splitlines())
                spans.extend((first + start, last + start) for first, last in lines_of)
                continue
            except _UNREWRITABLE:
                pass
        texts.extend(piece)
        spans.extend((number, number) for number in range(start + 1, end + 1))
    return Canonical("\n".join(texts), tuple(spans))


def _rewrite(tree: ast.Module, helpers: dict[str, ast.FunctionDef],
             numpy: frozenset[str] = frozenset({"np"})) -> tuple[str, tuple[tuple[int, int], ...]]:
    spans: dict[int, tuple[int, int]] = {}  # id(statement) -> its span in the original
    for node in _statements(tree):
        spans[id(node)] = (node.lineno, node.end_lineno or node.lineno)
    if helpers:
        tree.body = [node for node in tree.body if not (isinstance(node, ast.FunctionDef) and node.name in helpers)]
        tree = _CallsInlined(helpers).visit(tree)
    tree = _MethodForms(numpy).visit(tree)
    for node in tree.body:
        _visit(node, spans, in_function=False)
    text = ast.unparse(tree)
    statements, again = _statements(tree), _statements(ast.parse(text))
    if len(statements) != len(again):
        raise ValueError("the rewritten code does not read back as the same statements")
    count = len(text.splitlines())
    lines: list[tuple[int, int] | None] = [None] * count
    for node, back in zip(statements, again):  # outer statements first: an inner one's lines are its own
        first, last = spans.get(id(node), (back.lineno, back.end_lineno or back.lineno))
        end = back.end_lineno or back.lineno
        inner = [child for name in _BLOCKS for child in (getattr(back, name, None) or [])
                 if isinstance(child, ast.stmt)]
        if inner:  # a compound statement: its header stands for its own first line
            end = min(child.lineno for child in inner) - 1
            last = first
        for line in range(back.lineno, max(end, back.lineno) + 1):
            if line <= count:
                lines[line - 1] = (first, last)
    filled, following = [], None
    for span in reversed(lines):  # decorators and the like: the statement after them
        following = span or following or (1, 1)
        filled.append(following)
    return text, tuple(reversed(filled))


def _visit(node: ast.AST, spans: dict, *, in_function: bool, read: frozenset[str] | None = None) -> None:
    """Rewrite the blocks of ``node``; ``read``: every name the enclosing function reads (None: keep every store)."""
    inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        walked = list(ast.walk(node))
        read = None if any(isinstance(inner, (ast.Global, ast.Nonlocal)) for inner in walked) else frozenset(
            inner.id for inner in walked if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load))
    if isinstance(node, ast.ClassDef):
        inside, read = False, None
    for name in _BLOCKS:
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            for child in block:
                _visit(child, spans, in_function=inside, read=read)
            if inside:
                setattr(node, name, _simplify(block, spans, read=read))
    for handler in getattr(node, "handlers", []) or []:
        _visit(handler, spans, in_function=inside, read=read)
    for case in getattr(node, "cases", []) or []:
        _visit(case, spans, in_function=inside, read=read)


def _idle(statement: ast.stmt, read: frozenset[str] | None) -> bool:
    """A statement that adds nothing to what a function computes: a print, a lone name or constant, a store to a
    name the function never reads (padding a copy with these hides nothing)."""
    if isinstance(statement, ast.Expr):
        value = statement.value
        return isinstance(value, (ast.Name, ast.Constant)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print")
    name = _assigned_name(statement)
    return name is not None and read is not None and name not in read


def _simplify(block: list[ast.stmt], spans: dict, *, read: frozenset[str] | None = None) -> list[ast.stmt]:
    """Idle statements dropped; loops into comprehensions, and temporaries inlined, until nothing changes.

    One pass of inlining finds every temporary it can move (it goes forward, so a
    temporary read by another is moved first); only a new comprehension can make
    another possible (its list, now one statement, may be read once).
    """
    block = [statement for statement in block if not _idle(statement, read)]
    for _ in range(_MAX_PASSES):
        while _comprehend(block, spans):
            pass
        if not _inline(block, spans) or not _comprehend(block, spans):
            break
    return block or [ast.Pass()]


def _merge(spans: dict, into: ast.stmt, *taken: ast.stmt) -> None:
    found = [spans.get(id(node), (node.lineno, node.end_lineno)) for node in (into, *taken)]
    spans[id(into)] = (min(first for first, _ in found), max(last for _, last in found))


def _comprehend(block: list[ast.stmt], spans: dict) -> bool:
    """``n = []`` then ``for t in it: [if c:] n.append(e)`` -> ``n = [e for t in it if c]``, once."""
    for index in range(len(block) - 1):
        start, loop = block[index], block[index + 1]
        name = _assigned_name(start)
        if name is None or not (isinstance(start.value, ast.List) and not start.value.elts):
            continue
        if not isinstance(loop, ast.For) or loop.orelse:
            continue
        generators, element = _appended(loop, name)
        if element is None:
            continue
        comprehension = ast.ListComp(elt=element, generators=generators)
        replacement = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=comprehension, lineno=0)
        spans[id(replacement)] = spans.get(id(start), (start.lineno, start.end_lineno))
        _merge(spans, replacement, loop)
        block[index:index + 2] = [replacement]
        return True
    return False


def _appended(loop: ast.For, name: str) -> tuple[list[ast.comprehension], ast.expr | None]:
    """The generators and the element of a loop that only appends to ``name`` (nested loops and ifs allowed)."""
    generators = [ast.comprehension(target=loop.target, iter=loop.iter, ifs=[], is_async=0)]
    body = loop.body
    while len(body) == 1:
        only = body[0]
        if isinstance(only, ast.If) and not only.orelse:
            generators[-1].ifs.append(only.test)
            body = only.body
        elif isinstance(only, ast.For) and not only.orelse:
            generators.append(ast.comprehension(target=only.target, iter=only.iter, ifs=[], is_async=0))
            body = only.body
        elif (isinstance(only, ast.Expr) and isinstance(only.value, ast.Call) and len(only.value.args) == 1
              and not only.value.keywords and isinstance(only.value.func, ast.Attribute)
              and only.value.func.attr == "append" and isinstance(only.value.func.value, ast.Name)
              and only.value.func.value.id == name and not isinstance(only.value.args[0], ast.Starred)):
            element = only.value.args[0]
            if any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(element)):
                return generators, None
            return generators, element
        else:
            break
    return generators, None


def _assigned_name(statement: ast.stmt) -> str | None:
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return statement.targets[0].id
    return None


def _inline(block: list[ast.stmt], spans: dict) -> bool:
    """Names assigned in ``block`` and read before they are assigned again (once, or a few times if small): put
    where they are read, in one pass over the block."""
    changed = False
    index = 0
    if not any(_assigned_name(statement) for statement in block[:-1]):
        return False
    names = [_Names.of(statement) for statement in block]
    while index < len(block):
        statement = block[index]
        name = _assigned_name(statement)
        reads = _reads(block, names, index, name) if name is not None else None
        if not reads or (len(reads) > 1 and (len(reads) > MAX_READS or _size(statement.value) > MAX_SIZE)):
            index += 1
            continue
        for position, (later, use) in enumerate(reads):
            value = statement.value if position == len(reads) - 1 else copy.deepcopy(statement.value)
            names[later].replace(use, value)
            _merge(spans, block[later], statement)
        for later in {later for later, _ in reads}:
            names[later] = _Names.of(block[later])
        del block[index], names[index]
        changed = True
    return changed


def _reads(block: list[ast.stmt], names: list[_Names], index: int, name: str) -> list[tuple[int, ast.Name]] | None:
    """Where ``name``, assigned by ``block[index]``, is read before it is assigned again; None where it cannot move
    (read as ``n += 1``, assigned inside a loop or a branch, read in another scope)."""
    reads = []
    for later in range(index + 1, len(block)):
        found = names[later]
        for use in found.loads.get(name, ()):
            if use is None or id(use) in found.scoped:
                return None
            reads.append((later, use))
        if name in found.stores:
            if not _plain_rebinding(block[later], name):
                return None
            break
    return reads


@dataclass
class _Names:
    """The names one statement reads and stores, and where each read sits, from one walk of it."""

    loads: dict[str, list[ast.Name | None]]  # None: read by ``n += ...``
    stores: set[str]
    scoped: set[int]  # ids of the reads inside a function, class or lambda of the statement (another scope)
    places: dict[int, tuple[ast.AST, str, int | None]]  # id(read) -> (parent, field, position in a list field)

    @classmethod
    def of(cls, statement: ast.stmt) -> _Names:
        loads: dict[str, list] = {}
        stores: set[str] = set()
        places: dict[int, tuple] = {}
        scoped: set[int] = set()
        pending = [(statement, False)]  # (node, inside another scope); ast.walk, without its generators
        while pending:
            node, inner = pending.pop()
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                loads.setdefault(node.target.id, []).append(None)
            inner = inner or isinstance(node, _SCOPES)
            for field in node._fields:
                child = getattr(node, field, None)
                if isinstance(child, list):
                    for position, item in enumerate(child):
                        if isinstance(item, ast.AST):
                            _note(node, field, position, item, inner, loads, stores, places, scoped, pending)
                elif isinstance(child, ast.AST):
                    _note(node, field, None, child, inner, loads, stores, places, scoped, pending)
        return cls(loads, stores, scoped, places)

    def replace(self, use: ast.Name, value: ast.expr) -> None:
        parent, field, position = self.places[id(use)]
        if position is None:
            setattr(parent, field, value)
        else:
            getattr(parent, field)[position] = value


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _note(parent, field, position, item, inner, loads, stores, places, scoped, pending) -> None:
    if isinstance(item, ast.Name):
        if isinstance(item.ctx, ast.Load):
            loads.setdefault(item.id, []).append(item)
            places[id(item)] = (parent, field, position)
            if inner:
                scoped.add(id(item))
        else:
            stores.add(item.id)
    elif not isinstance(item, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)):
        pending.append((item, inner))


def _size(node: ast.AST) -> int:
    """Nodes in ``node``, counted up to one past ``MAX_SIZE``."""
    count, pending = 0, [node]
    while pending and count <= MAX_SIZE:
        item = pending.pop()
        count += 1
        pending.extend(child for child in ast.iter_child_nodes(item))
    return count


def _statements(tree: ast.AST) -> list[ast.stmt]:
    """Every statement of ``tree``, each before those inside it (the same order for the same structure)."""
    found, pending = [], [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.stmt):
            found.append(node)
        inner = [child for name in (*_BLOCKS, "handlers", "cases") for child in (getattr(node, name, None) or [])]
        pending.extend(reversed(inner))
    return found


def _plain_rebinding(statement: ast.stmt, name: str) -> bool:
    """``n = f(n)``: the read is in the value, the store is the statement's own target."""
    return _assigned_name(statement) == name
