"""Root causes from the student's own calls: "fix Y first" only for a Y the failing call entered and that
fails its own checks; a mistake written inline is named in the function that holds it.

The submissions are trusted snippets run in this process (the in-process stand-in records which of
their functions each call entered, as the worker does), so these tests need no worker.
"""

import dataclasses
from pathlib import Path

import pytest

from conftest import PROJECT, mutants
from grader.content.catalog import misconception_ids
from grader.grading.assignment import get_assignment
from grader.grading.runner import collect, run_tests
from grader.grading.student import StudentCode
from grader.paths import solution_path
from grader.results import summarize
from grader.sandbox.in_process import InProcessBox

REFERENCE = (PROJECT / "solutions" / "multihead_attention.py").read_text(encoding="utf-8")
SCORES = "    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (B, H, T, S)"
SPLIT = "        queries = self.split_heads(Q @ self.W_Q)  # (B, H, T, d_k)"


def graded(tmp_path: Path, source: str, name: str = "submission"):
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    exercise = get_assignment("multihead_attention")
    tests = collect(exercise, ("public",))
    student = StudentCode(InProcessBox.load(path))
    results = run_tests(tests, fixtures={"public": {"student": student, "cases": exercise.public_cases(),
                                                    "seed": None}}, assignment=exercise, lang="en")
    return summarize(student=name, tests=results, max_score=sum(t.points for t in tests),
                     assignment="multihead_attention", catalog_ids=misconception_ids())


def _changed(old: str, new: str, source: str = REFERENCE) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


def test_an_error_in_forward_blames_no_function_it_never_reached(tmp_path):
    # softmax fails its own checks, but forward stops at a method that does not exist before any attention
    source = _changed("    shifted = x - np.max(x, axis=-1, keepdims=True)  # (..., N)", "    shifted = x - np.max(x)")
    source = _changed("    def split_heads(self, x):", "    def split_head(self, x):", source)
    result = graded(tmp_path, source)
    forward = [test for test in result.tests if test.function == "forward" and test.outcome != "passed"]
    assert forward and all(test.root_cause is None and "softmax" not in test.message for test in forward)


def test_a_mistake_in_forwards_own_attention_is_forwards_even_when_attention_is_right(tmp_path):
    inline = ("        d_k = queries.shape[-1]\n"
              "        weights = softmax(queries @ np.swapaxes(keys, -1, -2))\n"
              "        heads = weights @ values")
    source = _changed("        heads, weights = scaled_dot_product_attention(queries, keys, values)", inline)
    result = graded(tmp_path, source)
    assert result.misconceptions == ("attention-no-scale",)
    forward = [test for test in result.tests if test.outcome != "passed"]
    assert forward and {test.function for test in forward} == {"forward"}
    assert all(test.root_cause is None for test in forward)


def test_a_split_mistake_reached_through_split_heads_is_split_heads(tmp_path):
    source = _changed("        x = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, T, H, d_k)\n"
                      "        return x.transpose(0, 2, 1, 3)  # (B, H, T, d_k)",
                      "        return x.reshape(batch, self.num_heads, length, self.d_k)")
    result = graded(tmp_path, source)
    forward = [test for test in result.tests if test.function == "forward" and test.outcome != "passed"]
    assert forward and all(test.root_cause == "split_heads" for test in forward)
    assert result.misconceptions == ("split-heads-no-transpose",)


def test_upstream_mistakes_are_each_named_once_with_forwards_own(tmp_path):
    source = _changed(SCORES, "    scores = Q @ np.swapaxes(K, -1, -2)")
    source = _changed("        out = self.combine_heads(heads) @ self.W_O  # (B, T, D)",
                      "        out = self.combine_heads(heads)", source)
    result = graded(tmp_path, source)
    assert result.misconceptions == ("attention-no-scale", "mha-no-output-projection")
    weights = next(test for test in result.tests if test.name == "test_forward_returns_per_head_weights_when_asked")
    assert weights.misconception == "mha-no-output-projection" and weights.root_cause is None
    assert weights.additional_misconceptions == ("attention-no-scale",)


def test_the_scale_moved_past_the_softmax_is_one_mistake_of_attention_in_every_check(tmp_path):
    # no scale on the scores, and V divided by sqrt(d_k): weights @ (V / sqrt(d_k)) is the output scaled after
    # the softmax, one mistake (not a missing scale plus a wrong value product), and forward's checks say where
    source = _changed(SCORES, "    scores = Q @ np.swapaxes(K, -1, -2)")
    source = _changed("    out = weights @ V  # (B, H, T, d_k)", "    out = weights @ (V / np.sqrt(d_k))", source)
    result = graded(tmp_path, source)
    assert result.misconceptions == ("attention-scale-after-softmax",)
    cross = next(test for test in result.tests if test.name == "test_forward_values_for_cross_attention")
    assert cross.root_cause == "scaled_dot_product_attention" and "fix scaled_dot_product_attention" in cross.message


def test_keys_reshaped_with_the_query_length_are_named_from_the_companion_case(tmp_path):
    source = _changed("        keys = self.split_heads(K @ self.W_K)  # (B, H, S, d_k)",
                      "        keys = (K @ self.W_K).reshape(Q.shape[0], Q.shape[1], self.num_heads, self.d_k)"
                      ".transpose(0, 2, 1, 3)")
    result = graded(tmp_path, source)
    assert result.misconceptions == ("mha-kv-uses-query-length",)


def test_a_mistake_seen_once_is_looked_for_first_and_the_findings_stay_the_same(monkeypatch):
    """Twins that matched a function's earlier failure are tried first on its later ones: every check of a
    buggy submission ends exactly as it does when every twin is run each time, with far fewer twin runs."""
    library = mutants("multihead_attention") / "mistakes"
    names = ["softmax_wrong_axis", "attention_returns_scores_no_scale", "split_interleaved_moveaxis",
             "combine_interleaved_stack", "no_scale_and_no_output_projection", "softmax_power_of_e"]
    modules = [("multihead_attention", library / f"{name}.py") for name in names]
    runs = {"hinted": 0, "every twin": 0}
    hinted = _library_ends(monkeypatch, modules, runs, "hinted")
    monkeypatch.setattr(StudentCode, "__init__", _without_hints(StudentCode.__init__))
    every = _library_ends(monkeypatch, modules, runs, "every twin")
    assert hinted == every
    assert any(check[1] == "failed" for checks in hinted.values() for check in checks)
    assert runs["hinted"] < 0.7 * runs["every twin"], runs


_TWIN_RUN = []  # the twins' own outcome_of, kept before any test counts its calls


def _library_ends(monkeypatch, modules, runs: dict, kind: str) -> dict:
    """Every check's (name, outcome, id, root cause, message) for each ``(assignment, path)`` of ``modules``,
    graded in this process on all checks; the twin runs it took are counted in ``runs[kind]``."""
    from grader.assignments import twinning
    from grader.grading.grade import plan_checks, run_checks

    if not _TWIN_RUN:
        _TWIN_RUN.append(twinning.outcome_of)

    def counted(module, case):
        runs[kind] += 1
        return _TWIN_RUN[0](module, case)
    monkeypatch.setattr(twinning, "outcome_of", counted)
    found = {}
    for assignment, path in modules:
        plan = plan_checks(assignment=assignment, visibility="all", student="library")
        box = InProcessBox.load(path, name=f"{kind.replace(' ', '_')}_{assignment}_{path.stem}")
        results = run_checks(box, plan=plan, visibility="all")
        found[assignment, path.stem] = [(r.name, r.outcome, r.misconception, r.root_cause, r.message)
                                        for r in results]
    return found


def _without_hints(init):
    def made(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.twin_hints = None
    return made


def test_diagnosing_with_less_work_names_every_mistake_as_before(monkeypatch):
    """Each twin's outcome on a case is computed once however many checks ask, on a copy of an instance made
    before where that is the same, and the weight and returned-scores fits test on their own only the key
    arrangements a vectorized test finds near (K arranged once per pair of arrays): every check of buggy
    submissions of several exercises ends exactly as when every asking check runs the twins again on fresh
    instances and every arrangement is made and tested, with fewer twin runs."""
    import importlib

    import numpy as np

    from grader.assignments import twinning
    from grader.assignments.multihead_attention import fitting
    from grader.grading.case import same_value

    core = mutants("multihead_attention") / "mistakes"
    modules = [("multihead_attention", core / f"{name}.py") for name in (
        "attention_no_scale", "attention_scores_keys_first", "softmax_wrong_axis",
        "no_scale_and_no_output_projection", "split_interleaved_moveaxis", "attention_softmax_axis_keyword")]
    modules += [(assignment, path) for assignment in ("kv_cache", "grouped_query_attention")
                for path in sorted((mutants(assignment) / "mistakes").glob("*.py"))]
    runs = {"less": 0, "everything": 0}
    less = _library_ends(monkeypatch, modules, runs, "less")

    def every_time(case, assignment, twins):  # with_expectations as it was: twins run for every asking check
        with np.errstate(all="ignore"):
            expected = twinning.run_case(twinning.load_reference(assignment), case)

        def differing(case, only=None):
            unreached = twinning.untouched(assignment, case)
            found = []
            for twin in twins:
                if (only is not None and (twin.misconception, twin.label) not in only) \
                        or twin.target.rpartition(".")[2] in unreached:
                    continue
                value = twinning.outcome_of(twinning.patched(assignment, twin), case)
                if not same_value(value, case.expected):
                    found.append((twin.misconception, twin.label, value))
            return found
        return dataclasses.replace(case, expected=expected, twins=None, twin_builder=differing)  # a frozen Case

    for assignment in {assignment for assignment, _ in modules}:
        monkeypatch.setattr(importlib.import_module(f"grader.assignments.{assignment}.cases"), "with_expectations",
                            every_time)
    monkeypatch.setattr(fitting, "_candidates", lambda logs, stacked, axes, **_: list(range(len(stacked))))
    monkeypatch.setattr(fitting, "_scaled_candidates", lambda values, stacked: list(range(len(stacked))))
    monkeypatch.setattr(fitting, "_ARRANGED_KEPT", 0)  # no arrangement kept: every fit arranges K again
    monkeypatch.setattr(twinning, "_new_instance", lambda cls, init, weights: None)  # every instance made afresh
    everything = _library_ends(monkeypatch, modules, runs, "everything")
    assert less == everything
    assert sum(check[1] == "failed" for checks_ in less.values() for check in checks_) > 20
    assert runs["less"] < runs["everything"], runs


# ---- mistakes written where no twin's function is entered, and mistakes that come in pairs ----------
LIBRARY = mutants("multihead_attention") / "mistakes"


def _library(tmp_path: Path, name: str):
    return graded(tmp_path, (LIBRARY / f"{name}.py").read_text(encoding="utf-8"), name)


def _failing(result, name: str):
    return next(test for test in result.tests if test.name == name)


def test_an_unshifted_exponential_inside_attention_is_attentions_and_forward_says_so(tmp_path):
    result = _library(tmp_path, "attention_exp_inline_unshifted")
    assert result.misconceptions == ("softmax-unstable",)
    attention = _failing(result, "test_attention_is_stable_for_large_scores")
    assert attention.misconception == "softmax-unstable" and attention.root_cause is None
    forward = _failing(result, "test_forward_is_stable_for_large_scores")
    assert forward.misconception == "softmax-unstable" and forward.root_cause == "scaled_dot_product_attention"
    assert all(test.outcome == "passed" for test in result.tests if test.function == "softmax")


def test_an_unshifted_exponential_inside_forward_is_forwards_own(tmp_path):
    result = _library(tmp_path, "forward_inline_attention_unshifted")
    assert result.misconceptions == ("softmax-unstable",)
    forward = _failing(result, "test_forward_is_stable_for_large_scores")
    assert forward.misconception == "softmax-unstable" and forward.root_cause is None
    assert all(test.outcome == "passed" for test in result.tests if test.function != "forward")


def test_the_keys_length_from_q_is_named_beside_a_softmax_axis_mistake(tmp_path):
    result = _library(tmp_path, "kv_query_length_and_softmax_axis_zero")
    assert result.misconceptions == ("mha-kv-uses-query-length", "softmax-wrong-axis")
    assert _failing(result, "test_forward_values_for_cross_attention").misconception == "mha-kv-uses-query-length"


def test_the_keys_length_from_q_is_named_beside_a_head_layout_mistake(tmp_path):
    result = _library(tmp_path, "kv_query_length_and_split_axes")
    assert result.misconceptions == ("mha-kv-uses-query-length", "split-heads-wrong-axes")


def test_a_residual_and_a_layer_norm_inside_forward_are_both_named_by_their_evidence(tmp_path):
    result = _library(tmp_path, "forward_add_and_norm")
    assert result.misconceptions == ("mha-adds-layer-norm", "mha-adds-residual")
    cross = _failing(result, "test_forward_values_for_cross_attention")
    assert "plus the query input Q" in cross.message and "layer-normalised" in cross.message
    assert all(test.outcome == "passed" for test in result.tests if test.function != "forward")


def test_a_residual_on_top_of_another_mistake_is_named_with_it(tmp_path):
    source = _changed("        out = self.combine_heads(heads) @ self.W_O  # (B, T, D)",
                      "        out = self.combine_heads(heads) + Q  # (B, T, D)")
    result = graded(tmp_path, source)
    assert result.misconceptions == ("mha-adds-residual", "mha-no-output-projection")


def test_a_broken_split_costs_combine_heads_nothing(tmp_path):
    source = _changed("        x = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, T, H, d_k)\n"
                      "        return x.transpose(0, 2, 1, 3)  # (B, H, T, d_k)",
                      "        return x.reshape(batch, self.num_heads, length, self.d_k)")
    result = graded(tmp_path, source)
    assert all(test.outcome == "passed" for test in result.tests if test.function == "combine_heads")
    assert _failing(result, "test_split_heads_gives_each_head_a_contiguous_block").outcome == "failed"


def test_a_broken_combine_still_fails_the_round_trip(tmp_path):
    source = _changed("        x = x.transpose(0, 2, 1, 3)  # (B, T, H, d_k)\n"
                      "        return x.reshape(batch, length, heads * d_k)  # (B, T, D)",
                      "        return x.reshape(batch, length, heads * d_k)")
    result = graded(tmp_path, source)
    assert _failing(result, "test_combine_heads_undoes_split_heads").outcome == "failed"
    assert result.misconceptions == ("combine-heads-no-transpose",)


# ---- the held-out corpus (mutants/*/corpus/): public code's styles, measured by bench_diagnosis_corpus ----
CORPUS = LIBRARY / "corpus"


def test_a_head_count_fixed_in_split_heads_is_named_from_its_layout(tmp_path):
    result = graded(tmp_path, (CORPUS / "heads_hardcoded_to_two.py").read_text(encoding="utf-8"), "two_heads")
    assert result.misconceptions == ("split-heads-hardcoded-shape",)
    layout = _failing(result, "test_split_heads_gives_each_head_a_contiguous_block")
    assert layout.misconception == "split-heads-hardcoded-shape"
    assert "2 heads" in layout.message and "3" in layout.message, layout.message
    # the right number of heads cut and laid out right stays unflagged by this rule
    assert all(test.outcome == "passed" for test in result.tests if test.function == "combine_heads")


def test_a_residual_added_before_the_output_projection_is_named(tmp_path):
    result = graded(tmp_path, (CORPUS / "residual_before_output_projection.py").read_text(encoding="utf-8"),
                    "residual_before")
    assert result.misconceptions == ("mha-adds-residual",)
    cross = _failing(result, "test_forward_values_for_cross_attention")
    assert cross.misconception == "mha-adds-residual" and "W_O" in cross.message, cross.message



def test_a_pre_norm_of_the_query_input_alone_is_a_layer_norm_inside_forward(tmp_path):
    result = graded(tmp_path, (CORPUS / "pre_norm_of_the_queries_only.py").read_text(encoding="utf-8"), "pre_norm_q")
    assert result.misconceptions == ("mha-adds-layer-norm",)
    assert _failing(result, "test_forward_values_for_cross_attention").misconception == "mha-adds-layer-norm"


@pytest.mark.parametrize("name", ["overflow_patched_with_nan_to_num", "overflow_avoided_by_clipping"])
def test_an_overflow_patched_over_or_clipped_is_an_unstable_softmax_not_another_axis(tmp_path, name):
    result = graded(tmp_path, (CORPUS / f"{name}.py").read_text(encoding="utf-8"), name)
    assert result.misconceptions == ("softmax-unstable",)
    stability = _failing(result, "test_softmax_is_stable_for_large_logits")
    assert stability.misconception == "softmax-unstable" and "only in rows whose logits are large" in stability.message
    attention = _failing(result, "test_attention_is_stable_for_large_scores")
    assert attention.misconception == "softmax-unstable" and attention.root_cause == "softmax"


def test_a_global_shift_seen_in_softmax_is_named_for_forwards_overflow_through_a_scrambled_split(tmp_path):
    """The head split moves the large rows elsewhere, so which rows broke no longer tells the two overflow
    mistakes apart; the one softmax's own checks showed exactly is named, not a second one."""
    result = graded(tmp_path, (CORPUS / "global_shift_and_split_without_transpose.py").read_text(encoding="utf-8"),
                    "global_and_split")
    assert result.misconceptions == ("softmax-global-max", "split-heads-no-transpose")
    assert _failing(result, "test_forward_is_stable_for_large_scores").misconception == "softmax-global-max"


def test_an_unshifted_exponential_inside_attention_beside_a_global_shift_in_softmax_is_attentions_own(tmp_path):
    source = _changed("    shifted = x - np.max(x, axis=-1, keepdims=True)", "    shifted = x - np.max(x)",
                      (LIBRARY / "attention_exp_inline_unshifted.py").read_text(encoding="utf-8"))
    result = graded(tmp_path, source, "inline_and_global")
    assert "softmax-global-max" in result.misconceptions
    attention = _failing(result, "test_attention_is_stable_for_large_scores")
    assert attention.misconception == "softmax-unstable" and attention.root_cause is None


def test_a_shift_by_column_maxima_is_a_wrong_axis_though_rows_sum_to_one(tmp_path):
    result = graded(tmp_path, (CORPUS / "shift_by_column_maxima.py").read_text(encoding="utf-8"), "column_shift")
    assert result.misconceptions == ("softmax-wrong-axis",)
    values = _failing(result, "test_softmax_values")
    assert values.misconception == "softmax-wrong-axis" \
        and "maximum over axis=" in values.message, values.message


def test_a_one_tuple_returned_without_the_weights_is_the_returned_weights_mistake(tmp_path):
    result = graded(tmp_path, (CORPUS / "returns_a_one_tuple_without_weights.py").read_text(encoding="utf-8"),
                    "one_tuple")
    assert result.misconceptions == ("mha-wrong-weights-returned",)
    assert _failing(result, "test_forward_values_for_cross_attention").misconception == "mha-wrong-weights-returned"


NO_SCALE = ("/ np.sqrt(d_k)", "")
NO_TRANSPOSE = ("x = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, T, H, d_k)\n"
                "        return x.transpose(0, 2, 1, 3)", "return x.reshape(batch, self.num_heads, length, self.d_k)")


def _without_ruling_out(init):
    def made(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.twins_ruled_out = None
    return made


def test_a_mistake_no_twin_makes_is_not_run_through_every_twin_again_on_the_same_sizes(monkeypatch, tmp_path):
    """A softmax over the batch axis breaks attention and forward in a way no twin gives: once a failure of
    theirs on some sizes was run through every twin, later failures on sizes of that pattern are not, and
    every check ends as when every twin runs each time. Also where a twin matches only on other sizes: with
    one head, a split without its transpose is right and the scale's twin matches; the weights of one head
    are exactly the twin's weights averaged over heads."""
    source = solution_path("multihead_attention").read_text(encoding="utf-8")
    batch_axis = source.replace("np.sum(exponentials, axis=-1, keepdims=True)", "np.sum(exponentials, axis=0, keepdims=True)")
    axis = tmp_path / "softmax_batch_axis.py"
    axis.write_text(batch_axis, encoding="utf-8")
    double = tmp_path / "no_scale_and_no_transpose.py"
    double.write_text(source.replace(*NO_SCALE, 1).replace(*NO_TRANSPOSE, 1), encoding="utf-8")
    assert batch_axis != source and double.read_text(encoding="utf-8").count("transpose(0, 2, 1, 3)") < source.count("transpose(0, 2, 1, 3)")
    modules = [("multihead_attention", axis), ("multihead_attention", double),
               ("multihead_attention", LIBRARY / "forward_returns_last_head_weights.py")]
    runs = {"ruled out": 0, "every twin": 0}
    ruled = _library_ends(monkeypatch, modules, runs, "ruled out")
    monkeypatch.setattr(StudentCode, "__init__", _without_ruling_out(StudentCode.__init__))
    every = _library_ends(monkeypatch, modules, runs, "every twin")
    assert ruled == every
    ends = ruled["multihead_attention", "no_scale_and_no_transpose"]
    assert any(check[0] == "test_one_head_is_plain_attention_of_the_projections" and "no scaling" in check[4]
               for check in ends)  # the twin that matches on one head only is still found there
    assert runs["ruled out"] < 0.8 * runs["every twin"], runs


# ---- the second corpus (mutants/*/corpus2/): written after the rules were fixed against the first ----
CORPUS2 = LIBRARY / "corpus2"


@pytest.mark.parametrize("binding", ["functools.partial(_normalise, axis=1)",
                                     "functools.partial(functools.partial(_normalise), axis=1)"])
def test_a_softmax_bound_by_partial_is_recorded_so_attention_is_not_charged_for_it(tmp_path, binding):
    """A top-level name bound to a partial of the student's own function is that function for the record:
    attention that calls it enters softmax, so softmax's wrong axis is softmax's, not attention's."""
    source = (CORPUS2 / "partial_fixes_axis_one.py").read_text(encoding="utf-8")
    source = source.replace("functools.partial(_normalise, axis=1)", binding)
    result = graded(tmp_path, source, "partial_axis")
    assert result.misconceptions == ("softmax-wrong-axis",)
    values = _failing(result, "test_attention_values")
    assert values.misconception == "softmax-wrong-axis" and values.root_cause == "softmax", values.message


def test_an_overflow_error_from_an_exponential_inside_attention_is_attentions_unstable_softmax(tmp_path):
    """math.exp raises instead of returning inf: raised in attention's own code, it is the unshifted
    exponential there, whatever the student's (right) softmax does."""
    result = graded(tmp_path, (CORPUS2 / "vectorized_math_exp_in_attention.py").read_text(encoding="utf-8"),
                    "vectorized_exp")
    assert result.misconceptions == ("softmax-unstable",)
    attention = _failing(result, "test_attention_is_stable_for_large_scores")
    assert attention.misconception == "softmax-unstable" and attention.root_cause is None, attention.message
    assert _failing(result, "test_forward_is_stable_for_large_scores").misconception == "softmax-unstable"
    assert all(test.outcome == "passed" for test in result.tests if test.function == "softmax")


@pytest.mark.parametrize("patch", [
    ("    shifted = x - np.max(x, axis=-1, keepdims=True)  # (..., N)", "    shifted = x - np.max(x)",
     "    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)",
     "    with np.errstate(all='ignore'):\n"
     "        return np.nan_to_num(exponentials / np.sum(exponentials, axis=-1, keepdims=True))"),
    None,  # the numpy.ma module of corpus2
])
def test_a_global_shift_whose_vanished_rows_were_patched_to_zero_is_named(tmp_path, patch):
    """One global shift patched over (0/0 filled with 0) leaves every row far below the top at zero, the
    moderate ones among them too: those rows vanished as the mistake predicts, so it is named."""
    if patch is None:
        source = (CORPUS2 / "masked_array_shift_by_array_max.py").read_text(encoding="utf-8")
    else:
        source = _changed(patch[2], patch[3], _changed(patch[0], patch[1]))
    result = graded(tmp_path, source, "global_patched")
    assert result.misconceptions == ("softmax-global-max",)
    stability = _failing(result, "test_softmax_is_stable_for_large_logits")
    assert stability.misconception == "softmax-global-max", stability.message


def test_moderate_rows_that_vanish_without_a_global_shift_stay_unnamed(tmp_path):
    """Rows zeroed where no global shift explains it (a moderate row the top is not far above) are no
    overflow mistake: the rule for patched rows stays quiet."""
    source = _changed("    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)",
                      "    out = exponentials / np.sum(exponentials, axis=-1, keepdims=True)\n"
                      "    return np.where(np.abs(x).max(axis=-1, keepdims=True) < 1, 0.0, out)")
    result = graded(tmp_path, source, "zeroed_small_rows")
    assert "softmax-global-max" not in result.misconceptions and "softmax-unstable" not in result.misconceptions


@pytest.mark.parametrize("name", ["softmax_last_two_axes", "attention_softmax_over_whole_matrix"])
def test_rows_that_vanish_under_a_normalizer_over_more_axes_are_no_patched_global_shift(tmp_path, name):
    """A softmax over a whole matrix also zeroes the rows far below the top, but leaves rows nearer it
    wrong and not vanished, which one global shift would have left right: no overflow id is named."""
    result = graded(tmp_path, (LIBRARY / f"{name}.py").read_text(encoding="utf-8"), name)
    assert not {"softmax-unstable", "softmax-global-max"} & set(result.misconceptions), result.misconceptions


# ---- the third corpus (mutants/*/corpus3/): written after corpus2's fixes, held out from the rules ----
CORPUS3 = LIBRARY / "corpus3"


@pytest.mark.parametrize("path", [CORPUS3 / "einsum_query_axis_softmax_then_scaled.py",
                                  LIBRARY / "scipy_softmax_over_queries_then_scaled.py",
                                  LIBRARY / "softmax_over_heads_then_scaled.py"], ids=lambda path: path.stem)
def test_weights_normalized_over_another_axis_and_then_scaled_name_both_mistakes(tmp_path, path):
    """Weights that sum to one constant (1/sqrt(d_k)) over the queries or the heads, not to 1: a softmax over
    the wrong axis and a scale after it, two mistakes of one line, are each named with what shows them."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert result.misconceptions == ("attention-scale-after-softmax", "attention-softmax-wrong-axis")
    values = _failing(result, "test_attention_values")
    assert "instead of 1: the scaling was applied after the softmax" in values.message, values.message
    assert "normalized over axis=" in values.message and "not over the keys" in values.message, values.message


def test_a_softmax_over_whole_matrices_with_identical_keys_is_not_called_a_scale_after_it(tmp_path):
    """With identical keys, a softmax over T and S is a softmax over T divided by S: one normalization
    explains it, so no scale after the softmax is named there."""
    result = graded(tmp_path, (LIBRARY / "attention_softmax_over_whole_matrix.py").read_text(encoding="utf-8"),
                    "whole_matrix")
    assert "attention-scale-after-softmax" not in result.misconceptions, result.misconceptions


@pytest.mark.parametrize("path", [CORPUS3 / "integer_reciprocal_of_head_width.py",
                                  LIBRARY / "attention_scale_int_of_reciprocal_root.py",
                                  LIBRARY / "attention_scale_floor_division_root.py"], ids=lambda path: path.stem)
def test_a_scale_that_rounds_to_zero_is_the_wrong_scale(tmp_path, path):
    """An integer reciprocal, int(...) or 1 // ... makes the scale 0: every weight is 1/S whatever the
    scores, which no positive scale fits; it is named as the wrong scale, with the uniform weight shown."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert result.misconceptions == ("attention-wrong-scale",)
    values = _failing(result, "test_attention_values")
    assert values.misconception == "attention-wrong-scale" and "multiplied by 0" in values.message, values.message


@pytest.mark.parametrize("path", [CORPUS3 / "scores_divided_by_query_norms.py",
                                  LIBRARY / "attention_scores_over_query_lengths.py",
                                  LIBRARY / "attention_scores_over_row_peak.py"], ids=lambda path: path.stem)
def test_scores_scaled_by_a_factor_of_each_query_are_the_wrong_scale(tmp_path, path):
    """Each query's scores divided by its own factor (its norm, its largest score): every row is a softmax of
    its scores, at a scale that varies from row to row; named as the wrong scale."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert result.misconceptions == ("attention-wrong-scale",)
    values = _failing(result, "test_attention_values")
    assert "a factor of its own" in values.message, values.message


def test_weights_of_two_keys_show_no_scale_of_their_own_per_query(tmp_path):
    """With two keys any row fits any scale: weights the rules cannot explain stay unexplained there rather
    than be called a scale per query (the one-key and drawn cases of a softmax over the batch, say)."""
    source = _changed("    weights = softmax(scores)  # (B, H, T, S), rows sum to 1 over S",
                      "    weights = np.exp(scores) / np.exp(scores).sum(axis=0, keepdims=True)")
    result = graded(tmp_path, source, "softmax_over_batch")
    assert all("a factor of its own" not in test.message for test in result.tests), result.misconceptions


@pytest.mark.parametrize("path", [CORPUS3 / "array_max_with_keepdims_and_gcd_check.py",
                                  LIBRARY / "init_refuses_only_coprime_sizes_lcm.py",
                                  LIBRARY / "init_refuses_by_fraction_denominator.py"], ids=lambda path: path.stem)
def test_a_constructor_that_refuses_only_coprime_sizes_is_caught(tmp_path, path):
    """A check through gcd, lcm or a reduced fraction refuses 10 with 3 heads but accepts 12 with 8: the
    constructor is also tried with sizes that share a factor."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert "mha-no-divisibility-check" in result.misconceptions
    check = _failing(result, "test_constructor_rejects_a_width_the_heads_do_not_divide")
    assert check.misconception == "mha-no-divisibility-check" and "12" in check.message and "8" in check.message


@pytest.mark.parametrize("path", [CORPUS3 / "einsum_weights_read_keys_first.py",
                                  LIBRARY / "attention_value_einsum_ellipsis_keys_first.py",
                                  LIBRARY / "attention_value_broadcast_sum_over_queries.py"], ids=lambda path: path.stem)
def test_a_value_product_that_raises_where_its_twin_raises_is_not_the_keys_length(tmp_path, path):
    """Weights read as (S, T) by an einsum or a broadcast product raise when S != T, in other words than the
    matmul of the twin that shows them on the same-length companion: that one mistake explains the raise,
    and the keys' length is not named beside it."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert result.misconceptions == ("attention-wrong-value-product",)


def test_a_reshape_error_beside_a_product_mistake_on_the_companion_is_still_the_keys_length(tmp_path):
    """The kind of error matters: keys cut with the query's length fail in a reshape, which no product
    mistake's twin explains, so the keys' length stays named."""
    result = graded(tmp_path, (LIBRARY / "kv_query_length_and_split_axes.py").read_text(encoding="utf-8"),
                    "kv_and_axes")
    assert "mha-kv-uses-query-length" in result.misconceptions
    assert _failing(result, "test_forward_shape_for_cross_attention").misconception == "mha-kv-uses-query-length"


@pytest.mark.parametrize("path", [CORPUS3 / "log_softmax_over_queries_and_query_as_memory.py",
                                  LIBRARY / "forward_query_as_memory_and_no_scale.py",
                                  LIBRARY / "self_attention_shortcut_and_softmax_axis_two.py",
                                  CORPUS / "self_attention_port_without_scale.py"], ids=lambda path: path.stem)
def test_keys_from_the_query_input_are_named_beside_the_mistake_of_the_weights(tmp_path, path):
    """Keys and values projected from Q, and a second mistake in the weights (an axis, no scale): forward's
    weights are fitted against the keys projected from Q, so both are named on forward's own check, each
    with what shows it, instead of the first hiding the second."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert "mha-ignores-key-value" in result.misconceptions and len(result.misconceptions) == 2
    weights = _failing(result, "test_forward_returns_per_head_weights_when_asked")
    assert weights.misconception == "mha-ignores-key-value", weights.message
    assert "projected from the query input" in weights.message and "Your weights" in weights.message.split(
        "ignores its K and V arguments.")[1], weights.message


@pytest.mark.parametrize(("path", "said"), [
    (CORPUS3 / "inputs_scaled_to_unit_norm.py", "Q, K and V scaled to unit length"),
    (LIBRARY / "forward_rms_norm_of_inputs.py", "RMS norm of Q, K and V"),
    (LIBRARY / "forward_output_rms_normalised.py", "root mean square"),
], ids=lambda item: getattr(item, "stem", ""))
def test_a_normalisation_without_centring_inside_forward_is_the_blocks_norm(tmp_path, path, said):
    """Q, K and V scaled to unit length or by their RMS before the projections, or the output divided by its
    RMS: normalisations over the model width that do not centre are the block's norm done inside the layer."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert result.misconceptions == ("mha-adds-layer-norm",)
    values = _failing(result, "test_forward_values_for_cross_attention")
    assert values.misconception == "mha-adds-layer-norm" and said in values.message, values.message


def test_an_output_scaled_by_one_constant_is_no_rms_norm(tmp_path):
    """Rows scaled by a factor that is not each row's own 1/RMS (one constant for every row) are no norm."""
    source = _changed("        out = self.combine_heads(heads) @ self.W_O  # (B, T, D)",
                      "        out = self.combine_heads(heads) @ self.W_O * 0.5  # (B, T, D)")
    result = graded(tmp_path, source, "halved_output")
    assert "mha-adds-layer-norm" not in result.misconceptions, result.misconceptions


def test_uniform_weights_are_not_taken_for_keys_from_the_query_input(tmp_path):
    """A scale rounded to 0 gives weights of 1/S whatever the keys: on every check, public and hidden, they
    say nothing about where the keys came from, so only the scale is named."""
    from grader.grading.grade import plan_checks, run_checks

    path = CORPUS3 / "integer_reciprocal_of_head_width.py"
    plan = plan_checks(assignment="multihead_attention", visibility="all", student="library")
    results = run_checks(InProcessBox.load(path, name="uniform_weights_all_checks"), plan=plan, visibility="all")
    named = summarize(student="uniform", tests=results, max_score=sum(result.max_score for result in results),
                      assignment="multihead_attention", catalog_ids=misconception_ids()).misconceptions
    assert named == ("attention-wrong-scale",), named


@pytest.mark.parametrize(("path", "mistake"), [
    (CORPUS3 / "forward_splits_keys_depth_major.py", "split-heads-interleaved"),
    (LIBRARY / "forward_cuts_keys_round_robin_inline.py", "split-heads-interleaved"),
    (LIBRARY / "forward_reshapes_queries_straight_inline.py", "split-heads-no-transpose"),
], ids=lambda item: getattr(item, "stem", item))
def test_heads_cut_wrongly_inside_forward_are_named_from_its_weights(tmp_path, path, mistake):
    """split_heads is right, but forward cuts the queries or the keys into heads itself, the wrong way: the
    weights are right attention of heads cut so, and that layout's mistake is named in forward."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert result.misconceptions == (mistake,)
    weights = _failing(result, "test_forward_returns_per_head_weights_when_asked")
    assert weights.misconception == mistake and weights.root_cause is None, weights.message
    assert "cut the wrong way" in weights.message, weights.message


@pytest.mark.parametrize("path", [CORPUS3 / "causal_mask_always_applied.py",
                                  LIBRARY / "attention_causal_mask_minus_1e9.py",
                                  LIBRARY / "forward_adds_causal_triangle.py"], ids=lambda path: path.stem)
def test_a_causal_mask_applied_on_every_call_has_its_own_id(tmp_path, path):
    """A decoder's causal mask always on (-inf or -1e9 above the diagonal, in attention or in forward's own
    attention) was only a mismatch; it is the catalogued attention-causal-mask now."""
    assert "attention-causal-mask" in misconception_ids()
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert result.misconceptions == ("attention-causal-mask",)


@pytest.mark.parametrize("path", [CORPUS3 / "moveaxis_sum_everything_and_width_last.py",
                                  LIBRARY / "split_width_before_length_and_softmax_axis_zero.py",
                                  LIBRARY / "split_swapaxes_width_and_global_shift.py"], ids=lambda path: path.stem)
def test_a_raise_that_only_looks_like_a_twin_of_a_function_its_own_checks_clear_is_not_charged_to_it(tmp_path, path):
    """split_heads returns (B, H, d_k, T), so forward's scores raise the very matmul error a value-product twin
    raises; attention's own checks fail, but for softmax's mistake, and never show that one: forward's
    checks trust them and charge the functions that fail, naming no value-product mistake."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert "attention-wrong-value-product" not in result.misconceptions, result.misconceptions
    assert "split-heads-wrong-axes" in result.misconceptions
    shape = _failing(result, "test_forward_shape_for_cross_attention")
    assert shape.misconception != "attention-wrong-value-product" and shape.root_cause is not None, shape.message


@pytest.mark.parametrize("path", [CORPUS3 / "layout_remembered_from_first_call.py",
                                  LIBRARY / "split_length_kept_from_the_first_call.py",
                                  LIBRARY / "split_sizes_setdefault_on_the_layer.py"], ids=lambda path: path.stem)
def test_sizes_a_layer_keeps_from_its_first_split_are_the_hardcoded_shape_not_the_keys_length(tmp_path, path):
    """split_heads keeping the first array's sizes on the layer passes every fresh-layer check; one layer
    splitting the query and then the key input catches it, and forward's keys cut with the queries' length
    are then that one mistake of split_heads, not also mha-kv-uses-query-length."""
    result = graded(tmp_path, path.read_text(encoding="utf-8"), path.stem)
    assert result.misconceptions == ("split-heads-hardcoded-shape",)
    split = _failing(result, "test_split_heads_works_for_any_batch_and_length")
    assert split.misconception == "split-heads-hardcoded-shape", split.message
    forward = _failing(result, "test_forward_shape_for_cross_attention")
    assert forward.misconception == "split-heads-hardcoded-shape" and forward.root_cause == "split_heads"


@pytest.mark.parametrize("name, check, own, beneath", [
    ("batch_axis_softmax_under_unscaled_scores", "test_attention_is_stable_for_large_scores",
     "attention-no-scale", "softmax-wrong-axis"),
])
def test_a_mistake_beneath_a_callees_is_named_from_the_call_with_a_right_callee(tmp_path, name, check, own,
                                                                              beneath):
    """A function's own mistake beneath a mistake of the function it calls, on the same call: no twin of either
    alone gives the value (it was a plain mismatch), and the call made again with a right callee shows the
    checked function's own; each function's checks name the mistake in its code."""
    result = _library(tmp_path, name)
    failing = _failing(result, check)
    assert own in failing.additional_misconceptions and "With right softmax in place of yours" in failing.message
    assert {own, beneath} <= set(result.misconceptions)


OUTPUT = "        out = self.combine_heads(heads) @ self.W_O  # (B, T, D)"
SPLIT_TAIL = "        return x.transpose(0, 2, 1, 3)  # (B, H, T, d_k)"


def test_an_output_projection_left_out_under_scrambled_heads_is_named_from_the_call_with_right_heads(tmp_path):
    # heads cut to (B, H, d_k, T): no twin of either mistake alone gives forward's value, and most calls raise
    source = _changed(SPLIT_TAIL, "        return x.transpose(0, 2, 3, 1)", _changed(OUTPUT, "        out = self.combine_heads(heads)"))
    result = graded(tmp_path, source)
    assert {"split-heads-wrong-axes", "mha-no-output-projection"} <= set(result.misconceptions)
    said = [test for test in result.tests if "mha-no-output-projection" in test.additional_misconceptions]
    assert said and all("With right split_heads" in test.message or "split_heads, " in test.message and
                        "in place of yours" in test.message for test in said)


def test_weights_returned_head_major_are_named_though_a_softmax_mistake_spoils_the_output(tmp_path):
    # a softmax over the first axis: on attention's (B, H, T, S) scores it normalises over the batch, which no
    # twin of the returned weights' mistake on top of it shows; the weights' axes are another order of (B, H, T, S)
    source = _changed("    shifted = x - np.max(x, axis=-1, keepdims=True)  # (..., N)\n"
                      "    exponentials = np.exp(shifted)  # (..., N)\n"
                      "    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)",
                      "    shifted = x - np.max(x, axis=0, keepdims=True)\n"
                      "    exponentials = np.exp(shifted)\n"
                      "    return exponentials / np.sum(exponentials, axis=0, keepdims=True)")
    source = _changed("            return out, weights  # weights: (B, H, T, S)",
                      "            return out, weights.transpose(1, 0, 2, 3)", source)
    result = graded(tmp_path, source)
    assert {"softmax-wrong-axis", "mha-wrong-weights-returned"} <= set(result.misconceptions)


SOFTMAX_SUM = "    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)"
ATTENTION_SCORES = "    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (B, H, T, S)"
VALUE_PRODUCT = "    out = weights @ V  # (B, H, T, d_k)"


def test_a_scale_put_after_a_softmax_that_raises_is_named_from_the_call_with_a_right_softmax(tmp_path):
    # the row sum without keepdims raises on every non-square input, so attention never shows its own values
    source = _changed(SOFTMAX_SUM, "    return exponentials / np.sum(exponentials, axis=-1)")
    source = _changed(ATTENTION_SCORES + "\n    weights = softmax(scores)  # (B, H, T, S), rows sum to 1 over S",
                      "    weights = softmax(Q @ np.swapaxes(K, -1, -2)) / np.sqrt(d_k)", source)
    result = graded(tmp_path, source)
    assert {"softmax-no-keepdims", "attention-scale-after-softmax"} <= set(result.misconceptions)
    said = [test for test in result.tests if "attention-scale-after-softmax" in test.additional_misconceptions]
    assert said and all("With right softmax in place of yours" in test.message for test in said)


def test_keys_projected_with_w_k_transposed_under_an_attention_that_breaks_forward_are_named(tmp_path):
    # attention hands back its output with the last two axes swapped: forward never gets as far as its values
    source = _changed(VALUE_PRODUCT, "    out = np.swapaxes(weights @ V, -1, -2)")
    source = _changed("        keys = self.split_heads(K @ self.W_K)  # (B, H, S, d_k)",
                      "        keys = self.split_heads(K @ self.W_K.T)", source)
    result = graded(tmp_path, source)
    assert "mha-wrong-projection" in result.misconceptions
    forward = [test for test in result.tests if "mha-wrong-projection" in test.additional_misconceptions]
    assert forward and all(test.function == "forward" and "in place of yours" in test.message for test in forward)


def test_keys_cut_with_the_query_length_under_an_attention_that_spoils_the_companion_are_named(tmp_path):
    # the product summed over the queries instead of the keys (no twin makes it) gives (B, H, S, d_k): wrong
    # on the S = T companion as well, which hides the lengths from the companion rule itself
    source = _changed(VALUE_PRODUCT, '    out = np.einsum("bhts,bhsd->bhsd", weights, V)')
    source = _changed("        keys = self.split_heads(K @ self.W_K)  # (B, H, S, d_k)",
                      "        keys = self.split_heads((K @ self.W_K).reshape(Q.shape))", source)
    source = _changed("        values = self.split_heads(V @ self.W_V)  # (B, H, S, d_k)",
                      "        values = self.split_heads((V @ self.W_V).reshape(Q.shape))", source)
    result = graded(tmp_path, source)
    assert "mha-kv-uses-query-length" in result.misconceptions


def test_inputs_changed_by_an_attention_whose_softmax_raises_are_named_from_the_call_with_a_right_softmax(tmp_path):
    # Q divided in place before the scores; the row sum without keepdims raises before the call can return
    source = _changed(SOFTMAX_SUM, "    return exponentials / np.sum(exponentials, axis=-1)")
    source = _changed(ATTENTION_SCORES, "    Q /= np.sqrt(d_k)\n    scores = Q @ np.swapaxes(K, -1, -2)", source)
    result = graded(tmp_path, source)
    assert {"softmax-no-keepdims", "attention-mutates-input"} <= set(result.misconceptions)
    unchanged = _failing(result, "test_attention_leaves_its_inputs_unchanged")
    assert "attention-mutates-input" in unchanged.additional_misconceptions and "in place of yours" in unchanged.message


def test_scores_returned_beside_a_global_shift_claim_no_value_product_mistake(tmp_path):
    # the global shift underflows rows of large scores, so out fits no scaling of the returned scores: that is
    # the softmax's doing, named by its own checks, and no sign of a product other than weights @ V
    source = _changed("    shifted = x - np.max(x, axis=-1, keepdims=True)  # (..., N)", "    shifted = x - x.max()")
    source = _changed("    return out, weights\n", "    return out, scores\n", source)
    result = graded(tmp_path, source)
    assert set(result.misconceptions) == {"softmax-global-max", "attention-returns-scores"}
