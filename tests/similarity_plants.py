"""Disguised copies, as a student hiding one would make them: every identifier renamed, comments and
docstrings gone, functions in another order, code moved into notebook cells."""

from __future__ import annotations

import ast
import builtins
import io
import json
import keyword
import tokenize

API = {"softmax", "scaled_dot_product_attention", "MultiHeadAttention", "split_heads", "combine_heads", "forward",
       "W_Q", "W_K", "W_V", "W_O", "self", "return_weights", "d_model", "num_heads"}


def bound_attributes(tree: ast.AST) -> set[str]:
    """The attributes the author set (``self.heads = ...``): after a dot, only these are theirs to rename."""
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)}


def bound_names(tree: ast.AST) -> set[str]:
    """The names the author chose: functions, classes, parameters, assigned names and attributes, import aliases."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    keywords = {node.arg for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg}
    dunders = {name for name in names if name.startswith("__") and name.endswith("__")}
    return names - API - keywords - dunders - set(dir(builtins)) - {"np", "numpy", "math", "functools"}


def rename_everything(text: str) -> str:
    """Every identifier the author chose renamed, every comment and docstring removed."""
    tree = ast.parse(text)
    docstrings = {node.body[0].value.lineno for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
                  and isinstance(node.body[0].value.value, str)}
    chosen, attributes = bound_names(tree), bound_attributes(tree)
    mapping: dict[str, str] = {}
    out = []
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        kind, value = token.type, token.string
        if kind == tokenize.COMMENT:
            value = ""
        elif kind == tokenize.STRING and token.start[0] in docstrings:
            value = "None"
        elif (kind == tokenize.NAME and value in chosen and not keyword.iskeyword(value)
              and (previous != "." or value in attributes)):  # `K.T` stays when the author's `T` is renamed
            value = mapping.setdefault(value, f"{'zyxwvutsrq'[len(mapping) % 10]}{len(mapping)}_{value[:1]}")
        previous = token.string
        out.append((kind, value))
    return tokenize.untokenize(out)


def reorder_functions(text: str) -> str:
    """The module's top-level definitions in the reverse order, imports first."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)

    def segment(node) -> str:
        first = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
        return "".join(lines[first - 1:node.end_lineno])

    imports = [segment(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    rest = [segment(node) for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    return "".join(imports) + "\n\n" + "\n\n".join(reversed(rest))


def as_notebook(text: str) -> str:
    """A notebook of ``text``: one code cell per top-level definition, a markdown cell and a magic between."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# My attention\n"},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": "%matplotlib inline\n"}]
    for node in tree.body:
        first = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
        cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                      "source": "".join(lines[first - 1:node.end_lineno])})
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
