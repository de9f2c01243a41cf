"""Every advanced exercise graded end to end: reference, stub, every mistake, other styles."""

import pytest

import advanced_track as track

# assignment -> the prefix of its catalog ids
TRACKS = {
    "masked_attention": "mask-",
    "kv_cache": "kv-cache-",
    "grouped_query_attention": "gqa-",
    "memory_efficient_attention": "flash-",
    "attention_backward": "backward-",
    "decoding_step": "decode-",
    "rotary_embedding": "rope-",
    "attention_biases": "bias-",
    "linear_attention": "linear-attention-",
    "paged_kv_cache": "paged-",
    "layer_norm": "norm-",
}
MISTAKES = [(name, path) for name in TRACKS for path in track.mistakes(name)]
VARIANTS = [(name, path) for name in TRACKS for path in track.correct_variants(name)]


@pytest.mark.parametrize("assignment", TRACKS)
def test_reference_scores_full_marks_through_the_installed_command(assignment):
    track.assert_full_marks(*track.check_installed(track.reference(assignment), assignment))


@pytest.mark.parametrize("assignment", TRACKS)
def test_stub_scores_zero_with_not_implemented(assignment):
    track.assert_not_implemented(*track.check(track.stub(assignment), assignment))


@pytest.mark.parametrize("assignment,path", MISTAKES, ids=lambda item: getattr(item, "stem", item))
def test_each_mistake_is_diagnosed_as_itself(assignment, path):
    track.assert_diagnosed(*track.check(path, assignment), track.fixture_id(path))


@pytest.mark.parametrize("assignment,path", VARIANTS, ids=lambda item: getattr(item, "stem", item))
def test_correct_solutions_in_other_styles_score_full_marks(assignment, path):
    track.assert_full_marks(*track.check(path, assignment))


@pytest.mark.parametrize("assignment", TRACKS)
def test_every_misconception_has_a_mistaken_fixture(assignment):
    assert len(track.correct_variants(assignment)) >= 2
    assert {track.fixture_id(path) for path in track.mistakes(assignment)} == track.catalog_ids(TRACKS[assignment])


@pytest.mark.parametrize("assignment", TRACKS)
def test_shipped_public_cases_are_up_to_date(assignment):
    track.assert_public_cases_up_to_date(assignment)


@pytest.mark.parametrize("assignment", TRACKS)
def test_audit_of_the_fixtures_is_clean(assignment):
    track.assert_audit_clean(assignment)
