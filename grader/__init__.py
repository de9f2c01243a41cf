"""mha-lab: the grader behind the `mha` command."""

__version__ = "0.1.0"
