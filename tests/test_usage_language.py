"""A command line used wrongly answers in the reader's language.

click's own errors (a missing argument or option, an unknown option, a bad value of a type), the frame it
puts around them (usage line, pointer to --help) and the command line's own usage errors of ``mha grade``,
``mha quiz``, ``mha viz`` and ``mha release`` are run through the installed ``mha`` with ``--lang zh``
and with a Chinese locale and no --lang; the Chinese is scanned for English prose (tests/language_scan.py),
the English for Chinese.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROJECT
from language_scan import chinese_in, english_prose

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"


def mha() -> str:
    found = shutil.which("mha", path=os.path.dirname(sys.executable)) or shutil.which("mha")
    assert found, "the mha command is not installed"
    return found


def run(*args, locale: str = "C.UTF-8", cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items()
           if name not in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE")}
    env["LANG"] = locale
    return subprocess.run([mha(), *map(str, args)], capture_output=True, text=True, env=env, timeout=180,
                          cwd=cwd)


# (command line, a fragment of the Chinese message that says what went wrong)
CASES = [
    (("grade",), "缺少参数 'SUBMISSIONS'"),
    (("grade", "{tmp}"), "缺少选项 '--out'"),
    (("grade", "{tmp}/nowhere", "--out", "{out}"), "路径 '{tmp}/nowhere' 不存在"),
    (("grade", "{tmp}", "--out", "{out}", "--jobs", "many"), "'many' 不是有效的范围内的整数"),
    (("grade", "{tmp}", "--out", "{out}", "--jobs", "0"), "不在范围"),
    (("grade", "{tmp}", "--out", "{out}", "--isolation", "docker"), "不在可选值"),
    (("grade", "{tmp}", "--out", "{out}", "--resume", "--overwrite"), "两者只能选一个"),
    (("grade", "{tmp}", "--out", "{out}", "--add-students"), "--add-students"),
    (("grade", "{tmp}", "--out", "{out}", "--nbgrader-db", "{tmp}/g.db", "--visibility", "public"), "`--visibility all`"),
    (("grade", "{tmp}", "--out", "{out}", "--quiz-topic", "cooking"), "不是一个主题"),
    (("grade", "{tmp}", "--out", "{out}", "--quiz-count"), "后面需要一个值"),
    (("grade", "{tmp}", "--out", "{out}", "--shard", "half"), "--shard 应当写成 K/N"),
    (("grade", "{tmp}", "--out", "{out}", "--shard", "5/4"), "K 必须在 1 到 N 之间"),
    (("grade", "{tmp}", "--out", "{out}", "--quiz-points", "lots"), "'lots' 不是一个数"),
    (("grade", "{tmp}", "--out", "{out}", "--quiz-points", "expert=4"), "'expert' 不是一个难度"),
    (("grade", "{tmp}", "--out", "{out}", "--quiz-points", "basic=1,advanced"), "'advanced' 不是“难度=分数”的写法"),
    (("grade", "{tmp}", "--out", "{out}", "--quiz-points", "-2"), "分数不能是 -2"),
    (("grade", "{tmp}", "extra", "--out", "{out}"), "多出了一个参数"),
    (("grade", "{tmp}", "--out", "{tmp}/out"), "位于"),
    (("grade", "{tmp}/notes.json", "--out", "{out}"), "不是 .py 或 .ipynb 文件"),
    (("grade", "{tmp}/empty", "--out", "{out}"), "里没有提交"),
    (("quiz", "--bogus"), "没有选项 '--bogus'"),
    (("quiz", "--outt", "x"), "你是不是想用"),
    (("quiz", "--topic", "cooking"), "没有主题 'cooking'"),
    (("quiz", "--list", "--stats"), "不能同时使用"),
    (("quiz", "--time-limit", "soon"), "不是一个时长"),
    (("quiz", "--time-limit", "0"), "时限必须大于零"),
    (("quiz", "--misconception", "no-such-idea"), "没有误解 'no-such-idea'"),
    (("quiz", "--sheet", "ada"), "--sheet 需要 --out"),
    (("quiz", "--from-feedback", "{tmp}/notes.json"), "不是结果 JSON"),
    (("viz", "--bogus"), "没有选项 '--bogus'"),
    (("viz", "{tmp}/nowhere.py"), "不是一个文件"),
    (("viz", "--seed", "x"), "不是有效的整数"),
    (("release",), "请说明要发布什么"),
    (("release", "--student"), "后面需要一个值"),
    (("nonsense",), "没有命令 'nonsense'"),
]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "ada.py").write_text(REFERENCE.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "notes.json").write_text("not json", encoding="utf-8")
    (tmp_path / "g.db").write_bytes(b"")
    (tmp_path / "empty").mkdir()
    return tmp_path


def _data(asked: list[str]) -> set[str]:
    """What a message may quote as it is: what the user typed, the values an option accepts, topic ids."""
    from grader.practice.bank import default_bank
    from grader.practice.schema import LEVELS

    pieces = {piece for arg in asked for piece in re.split(r"[=,:]", arg) if piece}  # a part of what was typed
    return {*asked, *pieces, "linux", "portable", *LEVELS, *default_bank().titles}


def _filled(args, tmp_path):
    return [str(arg).replace("{tmp}", str(tmp_path)).replace("{out}", str(tmp_path.parent / (tmp_path.name + "-out")))
            for arg in args]


def _with_lang(args: list[str], lang: str) -> list[str]:
    """``--lang`` after the verb (a release case that gives its own --lang keeps it)."""
    return args if "--lang" in args else [args[0], "--lang", lang, *args[1:]]


@pytest.mark.parametrize("args, says", CASES, ids=[" ".join(args) for args, _ in CASES])
def test_a_usage_error_is_told_in_chinese(args, says, folder):
    asked = _with_lang(_filled(args, folder), "zh")
    done = run(*asked, cwd=folder)
    assert done.returncode == 2, (done.stdout, done.stderr)
    said = done.stderr
    assert says.replace("{tmp}", str(folder)) in said, said
    assert not re.search(r"^(Error|Usage):|^Try '", said, re.M), said
    assert english_prose(said, allowed=_data(asked)) == [], said  # what the user typed is theirs
    if "用法：" in said:  # click's frame: usage line and the pointer to --help, in Chinese
        assert f"运行 'mha {args[0]} --help' 查看帮助。" in said or "运行 'mha --help' 查看帮助。" in said, said
        assert "[选项]" in said and "错误：" in said, said


@pytest.mark.parametrize("args, says", CASES[:: 4], ids=[" ".join(args) for args, _ in CASES[:: 4]])
def test_a_chinese_locale_without_lang_is_told_in_chinese_too(args, says, folder):
    asked = _filled(args, folder)
    done = run(*asked, locale="zh_CN.UTF-8", cwd=folder)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert says.replace("{tmp}", str(folder)) in done.stderr, done.stderr
    assert english_prose(done.stderr, allowed=_data(asked)) == [], done.stderr


@pytest.mark.parametrize("args, says", CASES[1:: 3], ids=[" ".join(args) for args, _ in CASES[1:: 3]])
def test_the_same_errors_in_english_hold_no_chinese(args, says, folder):
    done = run(*_with_lang(_filled(args, folder), "en"), locale="zh_CN.UTF-8", cwd=folder)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert chinese_in(done.stderr) == [], done.stderr
    assert done.stderr.strip(), "an English usage error says something"


def test_a_lang_click_refuses_leaves_the_locale_to_choose(folder):
    """``--lang fr`` is itself the error: it is told in the locale's language."""
    chinese = run("release", "--lang", "fr", locale="zh_CN.UTF-8", cwd=folder)
    english = run("release", "--lang", "fr", cwd=folder)
    assert chinese.returncode == english.returncode == 2
    assert "'--lang' 的值无效：'fr' 不在可选值 'en', 'zh' 之中。" in chinese.stderr, chinese.stderr
    assert "Invalid value for '--lang': 'fr' is not one of 'en', 'zh'." in english.stderr, english.stderr


def test_the_portable_warning_is_told_in_chinese(folder):
    done = run("grade", folder / "ada.py", "--out", folder / "out", "--isolation", "portable", "--lang", "zh",
               cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    warning = next(line for line in done.stderr.splitlines() if "--isolation portable" in line)
    assert warning.startswith("警告：") and "不能保护这台机器" in warning, warning
    assert english_prose(warning) == [], warning


def test_every_click_message_the_file_knows_translates_and_an_unknown_one_stays():
    from grader.content.usage import translate

    assert translate("Invalid value for '--jobs': 'x' is not a valid integer range.", "zh") == \
        "'--jobs' 的值无效：'x' 不是有效的范围内的整数。"
    assert translate("No such option '--outt'. Did you mean '--out'?", "zh") == \
        "没有选项 '--outt'。你是不是想用 '--out'？"
    assert translate("Missing option '--kind'. Choose from:\n\ta,\n\tb.", "zh") == \
        "缺少选项 '--kind'。可选：\n\ta,\n\tb。"
    assert translate("Something click may say one day.", "zh") == "Something click may say one day."
    assert translate("Missing option '--out'.", "en") == "Missing option '--out'."
