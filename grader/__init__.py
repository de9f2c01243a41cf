"""mha-lab: the grader behind the `mha` command."""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``from grader import check`` in a notebook, imported only when asked for."""
    if name == "check":
        from grader.notebook import check

        return check
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
