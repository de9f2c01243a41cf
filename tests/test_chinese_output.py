"""Chinese output holds no English prose, and English output no Chinese.

Code, identifiers, catalog ids, shapes, commands and the texts of Python's and
NumPy's exceptions stay as they are (tests/language_scan.py says what is not
prose). Held three ways: every bilingual text of grader/content and every
message template rendered in both languages; every buggy twin's label and the
isolation line; and a class of buggy files graded with ``--lang zh`` through
the installed ``mha`` command, its terminal, feedback pages and report scanned.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import string
import subprocess
import sys
import warnings

import pytest

from conftest import PROJECT, mutants
from language_scan import chinese_in, english_prose

sys.path.insert(0, str(PROJECT / "tests"))
import test_glossary  # noqa: E402  (its reader of every bilingual text)
from grader.content.messages import TwinLabel, render, templates, twin_label, twin_labels  # noqa: E402
from grader.grading.assignment import ASSIGNMENTS  # noqa: E402
from grader.sandbox.isolation import describe_isolation  # noqa: E402

PLACEHOLDER = re.compile(r"\{[^{}]*\}")
# English texts that name Chinese on purpose: what a student may type for true and false.
CHINESE_ON_PURPOSE = {"quiz.toml.text.sheet_answers_header"}


def test_the_scan_finds_what_it_must():
    assert english_prose("split_heads(x) 恰好是这个错误的结果（reshape straight to (B, H, T, d_k)）") == [
        "straight"]
    assert english_prose("正在评分 16 份提交；grading 16 submissions") == ["grading submissions"]
    assert english_prose("隔离：uid nobody, scrubbed environment") == ["scrubbed environment"]
    clean = ("`mha check my.py --lang zh` 会检查 split_heads 返回的 (B, H, T, d_k)；"
             "softmax-wrong-axis 提示 np.max(x, axis=-1)。ValueError: operands could not be broadcast together")
    assert english_prose(clean) == []
    assert english_prose("forward 抛出了 ValueError (line 147)：shapes differ。") == ["line", "shapes differ"]
    assert english_prose("无法加载你的文件：SyntaxError [f.py]（第 6 行）：expected ':' (f.py, line 6)") == []
    assert chinese_in("Graded 3 submissions: 张伟 scored 60", allowed={"张伟"}) == []
    assert chinese_in("the answer is 对") == ["对"]
    # a closing ** before a space is markup, not a product: "**pre-norm** 子模块" keeps pre-norm whole
    assert english_prose("**pre-norm** 子模块是") == [] and english_prose("**some words** 是") == ["some words"]


def bilingual_texts():
    return [(where, en, zh) for where, en, zh in test_glossary.bilingual_texts()]


def test_every_content_text_is_in_its_own_language():
    wrong = []
    for where, en, zh in bilingual_texts():
        english = english_prose(PLACEHOLDER.sub(" ", zh))
        chinese = [] if where in CHINESE_ON_PURPOSE else chinese_in(PLACEHOLDER.sub(" ", en))
        if english or chinese:
            wrong.append((where, english, chinese))
    assert wrong == []


class Sample:
    """A neutral value for a placeholder, whatever its format: an identifier, never prose in either language."""

    def __init__(self, name: str):
        self.name = name

    def __format__(self, spec: str) -> str:
        return f"{self.name}_1"


@pytest.mark.parametrize("key", sorted(templates()))
def test_every_message_template_renders_in_its_language(key):
    fields = {field for lang in ("en", "zh") for _, field, _, _ in string.Formatter().parse(templates()[key][lang])
              if field}
    params = {field: Sample(field) for field in fields}
    assert english_prose(render(key, params, "zh")) == []
    assert chinese_in(render(key, params, "en")) == []


def twins():
    found = []
    for name in ASSIGNMENTS:
        for module_name in (f"grader.assignments.{name}", f"grader.assignments.{name}.cases"):
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                continue
            if hasattr(module, "TWINS"):
                found += [(name, twin) for twin in module.TWINS]
                break
    return found


def test_every_twin_label_has_its_chinese_form():
    every = twins()
    assert len(every) >= 80
    missing = sorted({twin.label for _, twin in every} - set(twin_labels()))
    assert missing == [], "add them to the exercise folder's twins.toml"
    unused = sorted(set(twin_labels()) - {twin.label for _, twin in every})
    assert unused == []


@pytest.mark.parametrize("label", sorted(twin_labels()))
def test_a_diagnosis_names_its_twin_in_the_readers_language(label):
    params = {"what": "`split_heads(x)`", "label": TwinLabel(label)}
    chinese, english = render("matches_mistake", params, "zh"), render("matches_mistake", params, "en")
    assert twin_label(label, "zh") in chinese
    assert english_prose(chinese) == [], chinese
    assert label in english and chinese_in(english) == []


HELLOS = {
    "every layer": {"landlock": "landlock ABI 7 (fs, net, signals)", "namespaces": ["pid", "net", "ipc", "uts", "mount"],
                    "uid": 65534, "session": True, "tree": True, "grants": {"numpy": "/usr/lib/numpy"},
                    "cgroup": "cgroup per worker (v2 memory+pids)", "scratch": "tmpfs of 64 MiB"},
    "a laptop": {"landlock": "no landlock", "namespaces": [], "uid": 1000, "session": True, "cgroup": "",
                 "cgroup_missing": "not root; no pids controller is mounted", "memory_watched": True,
                 "scratch": "host folder, watched (64 MiB)",
                 "warnings": ["no read-only tree for the workers ([Errno 1] Operation not permitted): "
                              "Landlock alone decides what they read",
                              "uid 65534 cannot enter /root without a mount namespace: student code can import "
                              "only the modules the fork server preloaded"]},
    "a Windows laptop": {"portable": True, "platform": "win32", "session": True, "rlimits": [],
                         "kept": {"job": True, "memory_watchdog": True, "process_group": False}},
    "workers together": {"landlock": "landlock ABI 3 (fs)", "namespaces": [], "uid": 1000, "own_uid": True,
                         "cgroup": "cgroup per worker (v2 memory)", "cpu_share": False, "workers_apart": False,
                         "scratch": "tmpfs of 64 MiB"},
    "root without a cgroup": {"landlock": "landlock ABI 3 (fs)", "namespaces": ["pid"], "uid": 0, "cgroup": "",
                              "cgroup_missing": "cannot make a cgroup in /sys/fs/cgroup (Read-only file system)",
                              "scratch": "tmpfs of 16 MiB",
                              "warnings": ["no cgroup for this worker ([Errno 13] Permission denied): "
                                           "a watchdog sums its memory instead"]},
}


@pytest.mark.parametrize("name", sorted(HELLOS))
def test_the_isolation_line_is_said_in_the_readers_language(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chinese = describe_isolation(HELLOS[name], lang="zh")
        english = describe_isolation(HELLOS[name], lang="en")
    assert english_prose(chinese) == [], chinese
    assert chinese_in(english) == [], english
    assert ("uid nobody" in english) == (name == "every layer")
    if name == "a Windows laptop":
        assert english.startswith("portable worker (Windows): a child process of its own, new session, no rlimits")
        assert english.endswith("; WARNING: the portable worker does not protect this machine from hostile code: "
                                "it reads what your user can read and reaches the network")


# ---- a class graded in Chinese through the installed command ------------------------------------------

MISTAKES = mutants("multihead_attention") / "mistakes"
CLASS = ("attention_no_scale", "combine_heads_no_transpose", "attention_softmax_wrong_axis",
         "kv_reshaped_with_query_length", "float32_unstable", "attention_returns_scores", "attention_wrong_scale",
         "combine_heads_wrong_order", "einsum_split_no_transpose", "softmax_global_max",
         "forward_returns_head_averaged_weights", "init_checks_the_wrong_condition", "kv_asserts_query_shape")


def mha() -> str:
    found = shutil.which("mha", path=os.path.dirname(sys.executable)) or shutil.which("mha")
    assert found, "the mha command is not installed"
    return found


def scanned(text: str, students: set[str]) -> list[str]:
    return english_prose(text, allowed=students | {f"{student}.py" for student in students})


@pytest.mark.slow
def test_a_class_graded_in_chinese_says_everything_in_chinese(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    for name in CLASS:
        shutil.copy(MISTAKES / f"{name}.py", submissions / f"{name}.py")
    (submissions / "syntax_slip.py").write_text("def softmax(x)\n    return x\n", encoding="utf-8")
    (submissions / "empty_file.py").write_text("", encoding="utf-8")
    (submissions / "torch_import.py").write_text("import torch\n", encoding="utf-8")
    solution = (PROJECT / "solutions" / "multihead_attention.py").read_text(encoding="utf-8")
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
             for source in ("%matplotlib inline\nimport numpy as np", "%%time\nx = 1", solution,
                            "raise RuntimeError('a scratch cell')")]
    (submissions / "notebook_user.ipynb").write_text(json.dumps(
        {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    students = {path.stem for path in submissions.iterdir()}
    out = tmp_path / "out"
    done = subprocess.run([mha(), "grade", str(submissions), "--out", str(out), "--lang", "zh", "--jobs", "2"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "恰好是" in done.stdout or (out / "feedback").is_dir()
    found = {"terminal": scanned(done.stdout, students)}
    pages = sorted((out / "feedback").glob("*.md")) + sorted((out / "feedback").glob("*.html")) + [out / "report.html"]
    assert len(pages) == 2 * len(students) + 1
    for page in pages:
        found[page.name] = scanned(page.read_text(encoding="utf-8"), students)
    assert {name: phrases for name, phrases in found.items() if phrases} == {}
    # Chinese in ASCII brackets reads as a slip: full-width brackets around Chinese (the glossary's rule)
    for name, text in [("terminal", done.stdout)] + [(page.name, page.read_text(encoding="utf-8"))
                                                    for page in pages if page.suffix == ".md"]:
        assert not re.search(r"\([^()\n]*[\u4e00-\u9fff][^()\n]*\)", text), name
    # the diagnoses are there to be read: the twins' Chinese labels, in the pages the students get
    feedback = (out / "feedback" / "attention_no_scale.md").read_text(encoding="utf-8")
    assert "（没有缩放）" in feedback


@pytest.mark.slow
@pytest.mark.parametrize("name", ["einsum_split_no_transpose", "attention_no_scale", "softmax_global_max"])
def test_mha_check_in_chinese_says_everything_in_chinese(name):
    done = subprocess.run([mha(), "check", str(MISTAKES / f"{name}.py"), "--lang", "zh"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert scanned(done.stdout, {name}) == []
    assert "原因" in done.stdout


def test_a_quiz_in_chinese_says_everything_in_chinese():
    from click.testing import CliRunner

    from grader.cli import root

    for seed in (1, 2, 3):
        result = CliRunner().invoke(root, ["quiz", "--plain", "--count", "8", "--seed", str(seed), "--lang", "zh"],
                                    input="A\n" * 30)
        assert result.exit_code == 0, result.output
        assert "合计" in result.output
        assert english_prose(result.output) == [], result.output[:500]


@pytest.mark.parametrize("name", ["attention_no_scale", "einsum_split_no_transpose", "kv_asserts_query_shape"])
def test_the_notebook_view_in_chinese_says_everything_in_chinese(name):
    from grader.grading.grade import grade_submission
    from grader.render.notebook_html import result_to_html

    result = grade_submission(path=MISTAKES / f"{name}.py", assignment="multihead_attention", lang="zh")
    page = result_to_html(result, "zh")
    assert "原因" in page or "提示" in page
    assert scanned(page, {name}) == []
