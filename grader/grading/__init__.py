"""Grading one submission: the assignment registry, cases and their store, the suite runner, the
student proxy, the checks and their diagnosis.

May import: sandbox, content, foundation. Exercises are found by name
(``grader.assignments.<name>``), never imported here.
"""
