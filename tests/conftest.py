"""Shared test set-up: a fixed course key, and paths to the project's fixtures."""

from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT / "tests" / "fixtures"


@pytest.fixture(autouse=True)
def _course_key(monkeypatch, tmp_path_factory):
    """Hidden inputs come from a known key; nothing is written to the user's config."""
    monkeypatch.setenv("MHA_COURSE_KEY", "test-course-key")
    monkeypatch.setenv("MHA_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
