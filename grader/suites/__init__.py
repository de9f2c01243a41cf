"""The checks of each exercise as plain pytest files: ``<assignment>/{public,hidden}/test_*.py``.

Public suites ship to students, so they import only grading, content and
foundation modules; hidden suites may also use their exercise's module.
"""
