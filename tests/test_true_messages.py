"""Messages that say what is true: the next step, counts of one, pages of files that never loaded,
time limits and answers as a person says them. Each through the real command or renderer."""

from __future__ import annotations

import re

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import PROJECT, mutants
from grader.cli import root
from grader.practice import answers as quiz_answers
from grader.practice.bank import default_bank
from grader.practice.texts import duration

WIDE = {"COLUMNS": "250"}


def check(path, *arguments):
    result = CliRunner(env=WIDE).invoke(root, ["check", str(path), "--lang", "en", *arguments])
    return result.output


def next_step(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("Next step"))


def test_the_last_function_names_no_function_after_it():
    step = next_step(check(mutants("multihead_attention") / "mistakes" / "kv_reshaped_with_query_length.py"))
    assert step.startswith("Next step: fix forward (")
    assert "use it" not in step and "after it" not in step


def test_a_function_no_graded_function_calls_names_none():
    step = next_step(check(mutants("masked_attention") / "mistakes" / "mask_causal_off_by_one.py"))
    assert step.startswith("Next step: fix causal_mask (") and "use it" not in step


def test_the_functions_that_fail_because_of_it_are_named():
    step = next_step(check(mutants("multihead_attention") / "mistakes" / "attention_no_scale.py"))
    assert re.match(r"Next step: fix scaled_dot_product_attention first \(.*\); checks of forward, which use it, "
                    r"fail too\. Then run mha check again", step), step


def test_one_check_is_one_check(tmp_path):
    stub = tmp_path / "multihead_attention.py"
    stub.write_text((PROJECT / "exercises" / "multihead_attention.py").read_text(encoding="utf-8"), encoding="utf-8")
    output = check(stub, "--function", "__init__")
    assert "(multihead_attention, 1 check)" in output
    assert "1 checks" not in output


def test_a_drill_says_to_submit_the_drill(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner(env=WIDE)
    started = runner.invoke(root, ["drill", "softmax", "--workspace", str(tmp_path / "work"), "--lang", "en"])
    assert started.exit_code == 0, started.output
    submitted = runner.invoke(root, ["drill", "--submit", "--lang", "en"])
    step = next_step(submitted.output)
    assert "mha drill --submit" in step and "mha check" not in step


def test_a_page_of_a_file_that_never_loaded_says_no_function_ran(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "quinn.py").write_text("def softmax(x)\n    return x\n", encoding="utf-8")
    (submissions / "rosa.py").write_text("", encoding="utf-8")
    out = tmp_path / "out"
    for lang in ("en", "zh"):
        result = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(out / lang), "--lang", lang])
        assert result.exit_code == 0, result.output
    for student in ("quinn", "rosa"):
        english = (out / "en" / "feedback" / f"{student}.md").read_text(encoding="utf-8")
        assert "none of its functions was checked" in english
        assert "fix the first function that fails" not in english
        chinese = (out / "zh" / "feedback" / f"{student}.md").read_text(encoding="utf-8")
        assert "函数一个都没有检查" in chinese
        page = (out / "en" / "feedback" / f"{student}.html").read_text(encoding="utf-8")
        assert "<code>mha check</code>" in page and "`mha check`" not in page


@pytest.mark.parametrize("minutes,english,chinese", [
    (5 / 60, "5 seconds", "5 秒"), (1 / 60, "1 second", "1 秒"), (1, "1 minute", "1 分钟"),
    (30, "30 minutes", "30 分钟"), (0.5, "30 seconds", "30 秒")])
def test_a_time_limit_is_said_as_a_person_says_it(minutes, english, chinese):
    assert duration(minutes, "en") == english and duration(minutes, "zh") == chinese


def test_a_drill_of_five_seconds_says_five_seconds(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    started = CliRunner().invoke(root, ["drill", "softmax", "--time-limit", "5s", "--workspace",
                                        str(tmp_path / "work"), "--lang", "en"])
    assert started.exit_code == 0, started.output
    assert "you have 5 seconds" in started.output and "0.0833" not in started.output


def test_an_answer_asked_to_three_digits_is_shown_to_three_digits():
    question = default_bank().get("logits-temperature-weight")
    shown = set()
    for values in question.instances():
        posed = question.pose(np.random.default_rng(0), values={name: values[name] for name in question.variables})
        text = quiz_answers.expected_text(posed, "en")
        assert quiz_answers.check(posed, text).correct
        digits = re.sub(r"^0\.0*|[.,]", "", text)
        assert len(digits.rstrip("0") or "0") <= 3, text
        shown.add(text)
    assert len(shown) > 3


def test_a_wrong_unlock_answer_promises_new_numbers_only_when_there_are_some(tmp_path, monkeypatch):
    from grader.practice.prompts import PlainPrompter
    from grader.practice.unlocking import unlock_interactively, unlock_questions

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    fixed = [q for q in unlock_questions("softmax", np.random.default_rng(0)) if not q.is_template]
    assert fixed, "softmax is unlocked by a fixed statement"
    monkeypatch.setattr("grader.practice.unlocking.unlock_questions", lambda name, rng: fixed[:1])
    wrong = "false" if fixed[0].answer else "true"
    shown = []
    answers = iter([wrong, wrong])
    unlock_interactively("softmax", lang="en", prompter=PlainPrompter(read=lambda _: next(answers), write=shown.append),
                         rng=np.random.default_rng(0))
    said = "\n".join(shown)
    assert "Before the checks of softmax run, one question about it:" in said
    assert "Try once more." in said and "new numbers" not in said


def test_help_texts_say_what_each_option_does():
    for verb in ("viz", "demo", "release", "check", "quiz"):
        text = CliRunner().invoke(root, [verb, "--help"]).output
        assert "Language of the feedback" not in text and "instead of a table" not in text
    drill = CliRunner(env={"COLUMNS": "80"}).invoke(root, ["drill", "--help"], prog_name="mha").output
    assert drill.splitlines()[0] == "Usage: mha drill [OPTIONS] [FUNCTION]"
    from grader.practice.drill import DRILLS

    listed = " ".join(drill.split())
    assert all(name in listed for name in DRILLS)


def test_every_outcome_mark_is_drawn_by_the_default_fonts():
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    from grader.render.rules import MARKS

    covered = FT2Font(font_manager.findfont("DejaVu Sans")).get_charmap()
    assert [mark for mark in MARKS.values() if ord(mark) not in covered] == []


def test_the_class_summary_says_whom_the_mean_leaves_out(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "good.py").write_text((PROJECT / "solutions" / "multihead_attention.py").read_text(
        encoding="utf-8"), encoding="utf-8")
    (submissions / "empty.py").write_text("", encoding="utf-8")
    result = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / "out"), "--lang", "en"])
    assert "(over the 1 graded; 1 that could not be graded count 0 in grades.csv)" in result.output


def test_the_notebook_check_table_aligns_its_cells_itself():
    """JupyterLab right-aligns table cells with a rule that outranks the fragment's stylesheet."""
    from grader.grading.grade import grade_submission
    from grader.render.notebook_html import result_to_html

    result = grade_submission(path=mutants("multihead_attention") / "mistakes" / "attention_no_scale.py",
                              assignment="multihead_attention", functions=("softmax",), lang="en")
    html = result_to_html(result, "en")
    cells = re.findall(r"<t[dh]\b[^>]*>", html)
    assert cells and all("text-align:" in cell for cell in cells)


def test_a_second_drill_keeps_the_first_ones_file_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    runner, work = CliRunner(), tmp_path / "work"
    runner.invoke(root, ["drill", "all", "--workspace", str(work), "--lang", "en"])
    (work / "multihead_attention.py").write_text("# half an hour of work\n", encoding="utf-8")
    second = runner.invoke(root, ["drill", "forward", "--workspace", str(work), "--lang", "en"])
    assert "The drill of all that was running is replaced and not recorded" in second.output
    assert (work / "multihead_attention.previous.py").read_text(encoding="utf-8") == "# half an hour of work\n"


def test_a_drill_whose_file_is_gone_records_nothing(tmp_path, monkeypatch):
    from grader.practice.drill import load_history

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    runner, work = CliRunner(), tmp_path / "work"
    runner.invoke(root, ["drill", "softmax", "--workspace", str(work), "--lang", "en"])
    (work / "multihead_attention.py").unlink()
    submitted = runner.invoke(root, ["drill", "--submit", "--lang", "en"])
    assert submitted.exit_code != 0 and "nothing was checked or recorded" in submitted.output
    assert load_history() == []


@pytest.mark.slow
def test_quiz_lines_wrap_between_words_on_a_terminal():
    import os
    import pty
    import shutil
    import subprocess
    import sys

    command = shutil.which("mha", path=os.path.dirname(sys.executable)) or shutil.which("mha")
    assert command, "the mha command is not installed"
    main, secondary = pty.openpty()
    done = subprocess.run([command, "quiz", "--plain", "--count", "3", "--seed", "5", "--lang", "en"],
                          input=b"A\n" * 3, stdout=secondary, stderr=subprocess.STDOUT, timeout=120,
                          env={**os.environ, "COLUMNS": "60"})
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    output = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode("utf-8", "replace")).replace("\r", "")
    assert done.returncode in (0, 1), output
    lines = [line for line in output.splitlines() if not line.startswith("Your answer")]  # input()'s own prompt
    assert len([line for line in lines if line.strip()]) > 5
    assert max(len(line) for line in lines) <= 60, max(lines, key=len)


def test_a_final_score_above_the_maximum_is_pointed_out(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "carol.py").write_text((PROJECT / "solutions" / "multihead_attention.py").read_text(
        encoding="utf-8"), encoding="utf-8")
    table = tmp_path / "adjust.csv"
    table.write_text("student,points,reason\ncarol,2,presented in class\n", encoding="utf-8")
    result = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / "out"),
                                       "--adjust", str(table), "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert "final scores are above the maximum of 60: carol 62" in result.output


def test_the_students_usage_errors_speak_their_language(tmp_path):
    from language_scan import english_prose

    missing = CliRunner().invoke(root, ["check", str(tmp_path / "nothere.py"), "--lang", "zh"])
    assert missing.exit_code == 2 and "不存在" in missing.output and english_prose(missing.output) == []
    unknown = CliRunner().invoke(root, ["check", str(PROJECT / "solutions" / "multihead_attention.py"),
                                        "--function", "nope", "--lang", "zh"])
    assert unknown.exit_code == 2 and "没有名为 'nope' 的函数" in unknown.output
