"""The tiny model's tokens: a start marker and the lowercase letters, one embedding row each.

Kept apart from ``vocabulary.py`` (which reads and writes sentences) so the model
itself imports nothing of the grader.
"""

START = "<s>"
LETTERS = tuple("abcdefghijklmnopqrstuvwxyz")
TOKENS = (START, *LETTERS)
START_ID = 0
