"""Practice: the question bank, quizzes, sheets, spaced review, drills, unlocking."""
