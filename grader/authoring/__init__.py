"""Authoring: student and nbgrader releases, notebooks, regenerated public cases, the mutant audit.

May import every layer below the entry points: batch, viz, entries, practice, assignments,
grading, render, sandbox, stubs, tinymodel, content, foundation.
"""
