"""Every graded check has a title in both languages."""

import inspect

from grader.content.messages import check_title, check_titles
from grader.grading.assignment import ASSIGNMENTS
from grader.grading.runner import collect


def test_every_check_of_every_exercise_has_both_titles():
    names = {test.name for assignment in ASSIGNMENTS.values() for test in collect(assignment, ("public", "hidden"))}
    assert names and names <= set(check_titles()), sorted(names - set(check_titles()))
    for name in names:
        english, chinese = check_title(name, "en"), check_title(name, "zh")
        assert english and chinese and english != chinese
        assert any("\u4e00" <= character <= "\u9fff" for character in chinese), name


def test_a_check_without_a_title_reads_as_its_name():
    assert check_title("test_something_new", "zh") == "something new"
    assert inspect.signature(check_title).parameters["lang"].default == "en"
