"""Public checks of CausalSelfAttention.forward, with and without the cache."""

import numpy as np

from grader.content.messages import Message
from grader.grading.checks import CheckFailure, expect_value
from grader.grading.marker import mha
from grader.grading.steps import expect_steps

pytestmark = mha(function="forward", visibility="public")


@mha(points=3)
def test_forward_without_cache_is_causal_self_attention(student, cases):
    expect_value(student, cases["forward/full"])


@mha(points=4, probes=("kv-cache-not-appended", "kv-cache-recomputes-old", "kv-cache-mask-no-offset"))
def test_decoding_step_by_step_equals_the_full_causal_forward(student, cases):
    case = cases["forward/decode"]
    try:
        expect_steps(student, case)
    except CheckFailure as failure:
        steps = student.invoke(case).value
        full = cases["forward/full"].expected
        if isinstance(steps, tuple) and all(isinstance(step, np.ndarray) and step.ndim == 3 for step in steps) \
                and sum(step.shape[1] for step in steps) == full.shape[1]:
            difference = np.abs(np.concatenate(steps, axis=1) - full).max()
            failure.messages = (Message("steps_not_full", {"difference": f"{difference:.3g}"}), *failure.messages)
        raise


@mha(points=3, probes=("kv-cache-no-self-attend", "kv-cache-mask-no-offset"))
def test_new_tokens_attend_to_the_cache_and_to_themselves(student, cases):
    expect_steps(student, cases["forward/after-cached"])


@mha(points=2, probes=("kv-cache-not-appended",))
def test_the_cache_holds_the_projected_keys_and_values_per_head(student, cases):
    expect_steps(student, cases["forward/cache-contents"])
