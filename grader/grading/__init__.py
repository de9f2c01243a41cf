"""Grading one submission: the suite runner, the student proxy, the checks and their diagnosis."""
