"""A student's entry: which of its files is graded, and reading that file as it was found.

Shared by ``mha check`` (it ships in the student release), ``mha grade`` and the
Gradescope bundle. May import: practice (answers file names), grading, render,
sandbox, content, foundation. Never imported by grading or render.
"""
