"""The KV-cache exercise graded end to end: reference, stub, every mistake, other styles."""

import pytest

import advanced_track as track

ASSIGNMENT = "kv_cache"


@pytest.fixture(autouse=True)
def _course_key(monkeypatch, tmp_path):
    monkeypatch.setenv("MHA_COURSE_KEY", "test-course-key")
    monkeypatch.setenv("MHA_CONFIG_DIR", str(tmp_path / "config"))


def test_reference_scores_full_marks_through_the_installed_command():
    track.assert_full_marks(*track.check_installed(track.reference(ASSIGNMENT), ASSIGNMENT))


def test_stub_scores_zero_with_not_implemented():
    track.assert_not_implemented(*track.check(track.stub(ASSIGNMENT), ASSIGNMENT))


@pytest.mark.parametrize("path", track.mistakes(ASSIGNMENT), ids=track.fixture_id)
def test_each_mistake_is_diagnosed_as_itself(path):
    track.assert_diagnosed(*track.check(path, ASSIGNMENT), track.fixture_id(path))


@pytest.mark.parametrize("path", track.correct_variants(ASSIGNMENT), ids=lambda path: path.stem)
def test_correct_solutions_in_other_styles_score_full_marks(path):
    track.assert_full_marks(*track.check(path, ASSIGNMENT))


def test_every_kv_cache_misconception_has_a_mistaken_fixture():
    assert len(track.correct_variants(ASSIGNMENT)) >= 2
    assert {track.fixture_id(path) for path in track.mistakes(ASSIGNMENT)} == track.catalog_ids("kv-cache-")


def test_shipped_public_cases_are_up_to_date():
    track.assert_public_cases_up_to_date(ASSIGNMENT)


def test_audit_of_the_fixtures_is_clean():
    track.assert_audit_clean(ASSIGNMENT)
