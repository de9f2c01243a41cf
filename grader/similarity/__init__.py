"""Who copied from whom: code similarity across a class, aware of the exercise.

    sources       a class's submissions as code cells (the batch's discovery, the grader's notebook reading)
    tokens        code as normalized tokens, cut into units (one per function or method)
    fingerprints  winnowed k-gram fingerprints of the units (copydetect's winnowing)
    weights       what a shared fingerprint is worth: nothing for the stub, the reference or common code
    mistakes      the rare mistakes two students share, read from ``mha grade``'s results
    evidence      the matching passages of a pair, as line ranges in both files
    values        the same wrong values on the public fixtures (the unexplained failures run again, sandboxed)
    compare       the core: every pair of a class, and every submission against the answer key
    page          similarity.html, a pair side by side, in the run's language
    outputs       similarity.json and similarity.html written; the progress bar
    run           what the verbs call: read the class, run the fixtures, compare

A signal for a person, never a grade: nothing here changes a score, and the
students' feedback never mentions it.

May import: batch (its discovery), grading, render, sandbox, content, foundation.
"""
