"""The exercises: one module per assignment, each written the same way.

``<name>.py`` holds the exercise's buggy twins (a ``TWINS`` table, each twin one
function or method of a private copy of ``solutions/<name>.py`` replaced by the
mistake, see ``twinning.py``), its case builder (``public_cases(seed=None)``,
``hidden_cases(seed)``) and the metadata feedback needs on each case.
The solutions are loaded by ``grader.grading.reference``. Instructor side only: the
student release withholds this package and ships the public cases precomputed.

May import: grading, content, foundation (errors, paths, i18n, seeding, results).
"""
