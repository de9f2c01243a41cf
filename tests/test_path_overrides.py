"""Overrides of where grading finds its parts: scoped to a ``with``, ahead of the environment, never written to it."""

from __future__ import annotations

import os

from grader import paths, seeding
from grader.paths import Overrides, overridden


def test_overrides_come_before_the_environment_inside_the_with_only(tmp_path, monkeypatch):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "multihead_attention.py").write_text("# a reference\n", encoding="utf-8")
    monkeypatch.setenv("MHA_SOLUTIONS", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("MHA_COURSE_KEY", "the environment's key")
    monkeypatch.setenv("MHA_CONFIG_DIR", str(tmp_path / "environment-config"))
    before = dict(os.environ)
    assert paths.solution_path("multihead_attention") is None
    chosen = Overrides(solutions=solutions, config_dir=tmp_path / "bundle-config", course_key="the bundle's key")
    with overridden(chosen):
        assert paths.solution_path("multihead_attention") == solutions / "multihead_attention.py"
        assert seeding.course_key() == "the bundle's key"
        assert seeding.course_key_file() == tmp_path / "bundle-config" / "course_key"
        assert seeding.student_seed("ann") == seeding.student_seed("ann", key="the bundle's key")
        assert dict(os.environ) == before
    assert paths.solution_path("multihead_attention") is None
    assert seeding.course_key() == "the environment's key"
    assert paths.overrides() == Overrides()


def test_an_override_left_empty_keeps_what_the_environment_says(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_COURSE_KEY", "the environment's key")
    monkeypatch.setenv("MHA_SOLUTIONS", str(tmp_path))
    with overridden(Overrides(config_dir=tmp_path / "config")):
        assert seeding.course_key() == "the environment's key"
        assert paths.solutions_dir() == tmp_path
