"""Safe arithmetic for question templates.

A template's answer is written in its TOML file as a small expression over the
numbers it draws, e.g. ``"4 * d_model * d_model"`` or
``"(batch, num_heads, seq, d_model // num_heads)"``. Expressions are parsed
with ``ast`` and only numbers, names, tuples, arithmetic, comparisons,
``and``/``or``/``not`` and a few named functions are allowed: content files
never run arbitrary code.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping

Value = int | float | bool | tuple

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
FUNCTIONS = {
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tanh": math.tanh,
    "ceil": math.ceil,
    "floor": math.floor,
    "min": min,
    "max": max,
    "round": round,
}
# A bigger exponent is never needed for sizes and counts, and would let a
# typo in a content file stall the grader.
_LARGEST_EXPONENT = 64


class FormulaError(ValueError):
    """An expression uses something a template may not, or cannot be evaluated."""


def parse(expression: str) -> ast.Expression:
    """Parse and vet ``expression``; raise FormulaError on any disallowed part."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as error:
        raise FormulaError(f"not an expression: {expression!r} ({error.msg})") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise FormulaError(f"only {sorted(FUNCTIONS)} may be called in {expression!r}")
            if node.keywords:
                raise FormulaError(f"keyword arguments are not allowed in {expression!r}")
        elif not isinstance(node, _ALLOWED_NODES):
            raise FormulaError(f"{type(node).__name__} is not allowed in {expression!r}")
    return tree


def names(expression: str) -> set[str]:
    """The variable names ``expression`` reads (function names excluded)."""
    tree = parse(expression)
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} - called


def evaluate(expression: str, values: Mapping[str, Value]) -> Value:
    """The value of ``expression`` with its names bound from ``values``."""
    try:
        return _evaluate(parse(expression).body, values)
    except FormulaError:
        raise
    except (ArithmeticError, TypeError, ValueError) as error:
        raise FormulaError(f"{expression!r} failed: {error}") from None


_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Tuple, ast.BinOp, ast.UnaryOp,
    ast.BoolOp, ast.Compare, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd,
    *_BINARY, *_COMPARE,
)


def _evaluate(node: ast.AST, values: Mapping[str, Value]) -> Value:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (bool, int, float)):
            return node.value
        raise FormulaError(f"only numbers may appear as constants, not {node.value!r}")
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise FormulaError(f"unknown name {node.id!r}")
        return values[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(element, values) for element in node.elts)
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, values), _evaluate(node.right, values)
        if isinstance(node.op, ast.Pow) and abs(right) > _LARGEST_EXPONENT:
            raise FormulaError(f"exponent {right} is too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not operand
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BoolOp):
        results = [_evaluate(value, values) for value in node.values]
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = _evaluate(comparator, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        arguments = [_evaluate(argument, values) for argument in node.args]
        return FUNCTIONS[node.func.id](*arguments)
    raise FormulaError(f"{type(node).__name__} is not allowed")
