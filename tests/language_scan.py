"""Find prose of the wrong language in rendered output.

``english_prose(text)`` returns the English phrases left in a Chinese text.
What is not prose is allowed: code spans and blocks, identifiers (``d_k``,
``split_heads``, ``W_Q``, ``ValueError``, ``x.shape``), catalog ids
(``split-heads-no-transpose``), shapes and formulas (``(B, H, T, d_k)``,
``sqrt(d_k)``), commands and options (``mha check --lang zh``), paths and
file names, numbers with units, the terms the glossary keeps in Latin
letters (softmax, reshape, dropout, cgroup...), and what follows an exception's
name (Python's and NumPy's messages stay as they are). What is left, any
Latin word of three letters or more, is English prose.

``chinese_in(text)`` returns the Chinese characters left in an English text.
"""

from __future__ import annotations

import html
import os
import re

HAN = "\u3400-\u9fff\uf900-\ufaff"
# Words kept in Latin letters inside Chinese prose: names of things, as a Chinese teacher writes them.
TERMS = {
    "softmax", "reshape", "transpose", "dropout", "logits", "logit", "one-hot", "token", "tokens", "worker", "workers",
    "cgroup", "cgroups", "landlock", "tmpfs", "rlimit", "nobody", "root", "uid", "namespace", "tmp", "mib", "kib", "gib",
    "tflop", "flops", "flop", "float", "keepdims", "einsum", "numpy", "python", "pytest", "jupyter", "notebook",
    "nbgrader", "gradescope", "github", "classroom", "chromium", "mha", "html", "csv", "json", "toml", "markdown",
    "true", "false", "none", "nan", "inf", "exp", "max", "sum", "sqrt", "tril", "triu", "axis", "batch_size",
    "rope", "alibi", "yarn", "ntk", "flash", "lse", "scipy", "torch", "memory", "pids", "net", "signals", "unix",
    "ipc", "uts", "mount", "pid", "abi", "v1", "v2", "cpu", "gpu", "posix", "system", "kv", "llama", "gpt",
    "layernorm", "rmsnorm", "sigmoid", "tanh", "relu", "elu", "gelu", "mlp", "encoder", "decoder", "transformer", "query",
    "nbconvert", "ipynb", "py", "svg", "png", "utf", "fork", "tracemalloc", "shell", "traceback", "list", "resize",
    "tile", "repeat", "push", "docstring", "docstrings", "actions", "stub", "paris", "jensen", "shannon", "vllm", "mod", "ascii", "gpu", "tpu",
    "nvidia", "pytorch", "jax", "pdf", "ubuntu", "debian", "windows", "macos", "linux", "colab", "jupyterhub", "scatter", "tqdm", "rich", "click", "cuda", "slurm", "npz",
    # names of quantities in formulas
    "gamma", "tau", "phi", "pos", "acc", "score", "block", "log", "sin", "cos", "theta", "alpha", "beta", "sigma",
    "eps", "epsilon", "lambda", "top", "cdf", "metadata", "source", "cells", "outputs", "nbformat", "even", "odd", "hugging", "face", "roformer", "neox",
}
# English terms a Chinese text may give once in brackets after its Chinese name: 教师强制（teacher forcing）.
GLOSSES = ("teacher forcing", "inverted dropout", "pre-norm", "post-norm", "all-reduce", "base", "stub", "tie",
           "attention sink", "batch", "one-hot", "logits", "prefill", "decode", "Job Object", "nucleus")
_CODE = re.compile(r"```.*?```|`[^`\n]*`|<(code|pre|script|style)\b[^>]*>.*?</\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
# An exception's own text: after its name (and the file and line it names) and a colon, up to the end of
# the sentence ("ValueError（第 147 行）：operands could not be broadcast。").
_EXCEPTION = re.compile(r"\b[A-Z]\w*(Error|Exception|Warning|Interrupt|Exit)\b(?: \[[^\]\n]*\])?(?:（[^）\n]*）)?"
                        r" ?[:：][^。\n]*")
# What the operating system says (an OSError's text): "[Errno 13] Permission denied", "Read-only file system".
_OS_ERROR = re.compile(r"\[Errno \d+\]|" + "|".join(
    re.escape(os.strerror(number)) for number in sorted(range(1, 134), key=lambda n: -len(os.strerror(n)))
    if not os.strerror(number).startswith("Unknown error")))
_COMMAND = re.compile(r"\b(mha|python|pip|jupyter|nbgrader|git|cd)( +(-{1,2}[\w-]+|[\w./<>=:-]+))+")
_NOT_PROSE = [
    re.compile(r"\b[\w.]+\([^()\n]*\)"),  # calls with their arguments: np.searchsorted(cdf, u, side="right")
    re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S),  # formulas
    re.compile(r"\\[A-Za-z]+"),  # LaTeX commands
    re.compile("（(?:" + "|".join(re.escape(term) for term in GLOSSES) + ")）"),  # a gloss: 教师强制（teacher forcing）
    re.compile(r"\bGPT-\d+ (small|medium|large|XL)\b"),  # model names
    re.compile(r"\b[A-Za-z]\w*(?= ?[=+*/^<>@%\[]| - )|(?<=[=+*/^<>@\]]) ?[A-Za-z]\w*\b"),  # names in formulas
    re.compile(r"\b[\w-]+\.(py|ipynb|md|html|csv|json|toml|txt|npz|png|svg|zip|sh)\b"),  # file names
    re.compile(r"(?:[\w.~-]*/)+[\w.~*-]*"),  # paths
    re.compile(r"\b[a-z0-9]+(?:-[a-z0-9]+)+\b"),  # catalog ids and other hyphenated names
    re.compile(r"-{1,2}[a-z][\w-]*"),  # options
    re.compile(r"\b\w*[_\d]\w*\b"),  # identifiers with _ or digits: d_k, W_Q, fp16, test_split_heads
    re.compile(r"\b\w+(?:\.\w+)+\b"),  # dotted names: x.shape, np.max, K.T
    re.compile(r"\b\w+\("),  # calls: sqrt(, np.exp(
    re.compile(r"\b[A-Z][a-z]*[A-Z]\w*\b"),  # CamelCase: ValueError, MultiHeadAttention
    re.compile(r"\b[A-Z]{2,}s?\b"),  # acronyms: MHA, GQA, KV, FLOPs
    re.compile(r"\b[A-Za-z]\b"),  # single letters: B, H, T, x, q
]
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")
# *word* and **word** (the closing one before a space too: "**pre-norm** 子模块"), not 2 * T
_EMPHASIS = re.compile(r"(?<=[^\s*])\*+(?= )|(?<! )\*+(?! )|(?<= )\*+(?=\S)(?!\* )")
_MARKDOWN_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")


def code_names() -> frozenset[str]:
    """Every name the exercises' code uses (forward, weights, out, split_heads...) and Python's keywords."""
    import io
    import keyword
    import tokenize
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    names = set(keyword.kwlist)
    for path in [*root.glob("exercises/*.py"), *root.glob("solutions/*.py")]:
        for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
            if token.type == tokenize.NAME:
                names.add(token.string)
    return frozenset(names)


def plain(text: str) -> str:
    """``text`` without markup: HTML tags removed and entities decoded (code blocks kept for the scan)."""
    return html.unescape(text)


_NAMES = code_names()


def english_prose(text: str, *, allowed: set[str] = frozenset()) -> list[str]:
    """The English words and phrases of a Chinese ``text`` that are prose, not code or names.

    ``allowed``: strings the caller knows are data (a student's id, a file name they chose).
    """
    text = _CODE.sub(" ", _MARKDOWN_ESCAPE.sub(r"\1", plain(text)))
    text = _EMPHASIS.sub(" ", text)
    for name in sorted(allowed, key=len, reverse=True):
        text = text.replace(name, " ")
    text = _TAG.sub(" ", text)
    text = html.unescape(text)
    for pattern in (_EXCEPTION, _OS_ERROR, _COMMAND, *_NOT_PROSE):
        text = pattern.sub(" ", text)
    found, run = [], []
    for piece in re.split(rf"([{HAN}，。；：？！、（）“”‘’《》【】\n|]+)", text):
        if re.fullmatch(rf"[{HAN}，。；：？！、（）“”‘’《》【】\n|]+", piece or "x"):
            if run:
                found.append(" ".join(run))
            run = []
            continue
        for word in _WORD.findall(piece):
            if len(word) >= 3 and word.lower() not in TERMS and word not in _NAMES:
                run.append(word)
            elif run:
                found.append(" ".join(run))
                run = []
    if run:
        found.append(" ".join(run))
    return found


def chinese_in(text: str, *, allowed: set[str] = frozenset()) -> list[str]:
    """The runs of Chinese characters in an English ``text`` (apart from ``allowed`` ones, e.g. a name)."""
    runs = re.findall(rf"[{HAN}]+", _TAG.sub(" ", plain(text)))
    return [run for run in runs if not any(run in name for name in allowed)]
