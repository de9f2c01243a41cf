"""Practice: the question bank, quizzes, sheets, spaced review, drills, unlocking.

May import: grading (a drill or --from-feedback grades a file), stubs, content, foundation.
Class grading enters this package only through ``homework.py``.
"""

# A student's quiz answers file beside their code (``grader.practice.homework`` grades it).
ANSWERS_SUFFIX = ".answers.toml"


def is_answers_file(name: str) -> bool:
    return name == "answers.toml" or name.endswith(ANSWERS_SUFFIX)
