"""The exercises: one folder per exercise, ``<name>/``, each laid out the same way.

    exercise.toml        the spec: where it comes in the curriculum, its graded functions in order
    cases.py             its buggy twins (a ``TWINS`` table, see ``twinning.py``) and case builders,
                         ``public_cases(seed=None)`` and ``hidden_cases(seed)``, with what feedback needs
    public/, hidden/     its checks as plain pytest files (``test_*.py``)
    public_cases.npz     the public cases, precomputed (``python -m grader.authoring.cases``)
    checks.toml          the checks' titles, in English and Chinese
    misconceptions.toml  its catalogued mistakes: titles, explanations, hints in both languages
    mutants/             the audit's library: ``mistakes/`` and ``correct/`` modules
    tutorial/            the notebook texts (the core exercise)

Exercises are found by their folders (``grader.grading.assignment``). The
student release ships each folder's spec and texts and the released
exercise's public checks; ``cases.py``, the hidden checks, the mutant library
and this package's own module ``twinning.py`` stay with the instructor (the
solutions are loaded by ``grader.grading.reference``, which ships). Public checks therefore import only
grading, content and foundation modules; hidden checks and ``cases.py`` may
also use ``twinning``.

May import: grading, sandbox (the worker's call recorder), content, foundation.
"""
