"""Every template draws only possible worlds, and every instance asks what it means to ask.

tests/test_quiz_templates.py checks each template's arithmetic against code.
Arithmetic can be right about an impossible machine (a utilisation of 500 %,
a 124M-parameter model with 32 layers of width 4096), so here every instance
of every template (every combination of its variables that its ``require``
rules allow) is checked against the laws its file states (``physical``) and
against the laws every template obeys, read from the names of its values.
"""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

from grader.practice.bank import default_bank

# Templates whose world has a law beyond the names' laws below: each must state it.
MUST_STATE_LAWS = {
    "sizing-model-flops-utilisation",  # at most 100 %, and in the range real runs reach
    "sizing-flops-per-token",  # N from the layer shapes; a width-to-depth ratio of real models
    "scaling-factor-value",  # the mistake it drills, sqrt(d_model), must give another number
    "serving-cache-rivals-weights",  # within Llama 2's 4,096-token context
    "decoding-new-token-last-key",  # a key that exists
}
# Templates that ask exactly whether a law holds, so their instances may break it.
ASKS_THE_LAW = {"heads-divisibility"}


def templates():
    return [question for question in default_bank().questions if question.is_template]


def instances(question):
    found = list(question.instances())
    assert found, f"{question.id}: no combination meets its 'require' rules"
    return found


def name_laws(question, values) -> list[str]:
    """The laws every template obeys, by the names of its values; the broken ones."""
    broken = []
    if question.id not in ASKS_THE_LAW:
        if {"d_model", "num_heads"} <= set(values) and values["d_model"] % values["num_heads"]:
            broken.append("num_heads divides d_model")
        if {"num_heads", "kv_heads"} <= set(values) and values["num_heads"] % values["kv_heads"]:
            broken.append("kv_heads divides num_heads")
    for name in ("batch", "seq", "seq_q", "seq_k", "d_model", "d_k", "num_heads", "layers", "window"):
        if name in values and values[name] < 1:
            broken.append(f"{name} is at least 1")
    if question.kind == "shape":
        broken += swapped_axes_pass(question, values)
    return broken


def swapped_axes_pass(question, values) -> list[str]:
    """Two axes of a shape answer with the same size: a student who swaps them is marked right."""
    parts = [ast.unparse(node) for node in ast.parse(question.answer, mode="eval").body.elts]
    sizes = question.answer_for(values)
    clashes = []
    for i in range(len(parts)):
        for j in range(i + 1, len(parts)):
            if parts[i] != parts[j] and sizes[i] == sizes[j] and sizes[i] > 1:
                clashes.append(f"axes {parts[i]} and {parts[j]} differ in size (both {sizes[i]})")
    return clashes


@pytest.mark.parametrize("question", templates(), ids=lambda question: question.id)
def test_every_instance_is_a_possible_world(question):
    for values in instances(question):
        broken = question.broken_laws(values) + name_laws(question, values)
        assert not broken, (question.id, {k: v for k, v in values.items() if k in question.variables}, broken)


def test_templates_with_a_law_of_their_own_state_it():
    bank = default_bank()
    assert [qid for qid in sorted(MUST_STATE_LAWS) if not bank.get(qid).physical] == []


def test_a_law_is_checked_not_assumed():
    utilisation = default_bank().get("sizing-model-flops-utilisation")
    values = next(iter(utilisation.instances()))
    impossible = dict(values, utilisation=134.6)  # what 7B at 10,000 tokens/s on one 312 TFLOP/s GPU keyed
    assert utilisation.broken_laws(impossible) == ["answer <= 100", "15 <= answer <= 60"]
    heads = default_bank().get("attention-scores-shape")
    clash = dict(next(iter(heads.instances())))
    clash.update(batch=4, heads=4)
    assert swapped_axes_pass(heads, clash)


def test_every_template_has_several_worlds():
    """A template with one world is a fixed question: its answer can be memorised."""
    assert {q.id: n for q in templates() if (n := len(instances(q))) < 2} == {}


# "a batch of 1 sequences": a count of one before a plural noun, outside formulas ("W - 1 tokens")
ONE_BEFORE_PLURAL = re.compile(r"(?<![-+*/^.,\d] )(?<![-+*/^.,\d])\b1 (sequences|tokens|positions|bytes|heads|keys|"
                               r"queries|layers|rows|questions|checks|devices|requests|blocks|values)\b")


@pytest.mark.parametrize("question", templates(), ids=lambda question: question.id)
def test_every_instance_reads_right_in_english(question):
    for values in instances(question):
        posed = question.pose(np.random.default_rng(0), values={name: values[name] for name in question.variables})
        for text in (posed.prompt["en"], posed.explanation["en"]):
            assert not ONE_BEFORE_PLURAL.search(text), (question.id, ONE_BEFORE_PLURAL.search(text).group(0))


def test_the_plural_rule_sees_a_count_of_one():
    assert ONE_BEFORE_PLURAL.search("the cache for a batch of 1 sequences of 2048 tokens")
    assert ONE_BEFORE_PLURAL.search("a key 1 positions before the query")
    assert not ONE_BEFORE_PLURAL.search("the token itself and the W - 1 tokens before it")
    assert not ONE_BEFORE_PLURAL.search("a batch of 21 sequences, 0.1 bytes")
