"""Grading a class: discovery of student entries, lanes of grading processes, the journal, outputs, merging.

May import: entries, practice (only its package's own names and ``practice.homework``), grading,
render, sandbox, content, foundation. Never imported by grading or render.
"""
