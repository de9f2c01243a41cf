"""Every help page of the installed ``mha`` in the reader's language (texts: grader/content/help.toml).

Code names, option flags, metavars, the values an option accepts and the verbs' names may stay as they are;
any other English word on a Chinese page (or Chinese on an English one) is a missing translation.
"""

from __future__ import annotations

import importlib
import re
import unicodedata

import click
import pytest

from grader.cli import VERBS, root
from grader.content.help import ROOT, _texts, help_text, parameter_keys, wrapped
from language_scan import chinese_in, english_prose
from test_usage_language import run

PAGES = ["", *VERBS]  # "" is `mha --help` itself


def _command(verb: str) -> click.Command:
    module, attribute = VERBS[verb].split(":")
    return getattr(importlib.import_module(module), attribute)


def _data() -> set[str]:
    """What a page shows as the user types it: the verbs and the values every option accepts."""
    values = set(VERBS)
    for verb in VERBS:
        for parameter in _command(verb).params:
            if isinstance(parameter.type, click.Choice):
                values.update(parameter.type.choices)
    return values


def _prose(page: str) -> list[str]:
    """The English prose of a Chinese ``page``, the verbs and option values (whole words) apart."""
    words = "|".join(sorted(map(re.escape, _data()), key=len, reverse=True))
    page = re.sub(r"[\d.]*<=?x<=?[\d.]*|\bx[<>]=?[\d.]+", " ", page)  # click's ranges, 0.1<=x<=100.0: no tags
    return english_prose(re.sub(rf"(?<![\w./-])({words})(?![\w./-])", " ", page))


def _help(verb: str, *lang: str, locale: str = "C.UTF-8", columns: int = 100) -> str:
    """The page of ``mha VERB --help`` (``--lang`` where the verb has it, else the locale decides)."""
    import os

    if verb and not any(parameter.name == "lang" for parameter in _command(verb).params):
        lang, locale = (), {"zh": "zh_CN.UTF-8", "en": "C.UTF-8"}[lang[0]] if lang else locale

    os.environ["COLUMNS"] = str(columns)  # `run` passes the environment on; click reads the width from it
    try:
        done = run(*([verb] if verb else []), *(["--lang", *lang] if lang else []), "--help", locale=locale)
    finally:
        del os.environ["COLUMNS"]
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("verb", PAGES, ids=[verb or "mha" for verb in PAGES])
def test_every_help_page_is_chinese_with_lang_zh_or_a_chinese_locale(verb):
    page = _help(verb, "zh") if verb else _help(verb, locale="zh_CN.UTF-8")
    assert page.startswith(f"用法：mha {verb}".rstrip()), page
    assert "选项：" in page and "显示这份帮助并退出。" in page, page
    assert "Usage:" not in page and "Options:" not in page and "default:" not in page, page
    assert _prose(page) == [], page
    if verb:  # the locale alone gives the same page
        assert _help(verb, locale="zh_CN.UTF-8") == page


@pytest.mark.parametrize("verb", PAGES, ids=[verb or "mha" for verb in PAGES])
def test_every_help_page_in_english_holds_no_chinese(verb):
    page = _help(verb, "en", locale="zh_CN.UTF-8") if verb else _help(verb)
    assert page.startswith(f"Usage: mha {verb}".rstrip()) and "Options:" in page, page
    assert chinese_in(page) == [], page
    about = help_text(f"verb.{verb or ROOT}.about", "en").split("\n")[0].split(" ")[:4]
    assert " ".join(about) in " ".join(page.split()), page


def test_a_chinese_page_fits_a_narrow_terminal_by_display_width():
    page = _help("grade", "zh", columns=60)
    widths = [sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)
              for line in page.splitlines()]
    too_wide = [line for line, width in zip(page.splitlines(), widths) if width > 60 and "`" not in line
                and " " in line.strip()]
    assert too_wide == [], too_wide
    assert not any(line.lstrip().startswith(("，", "。", "）", "；")) for line in page.splitlines()), page


def test_wrapping_breaks_beside_chinese_and_at_spaces_but_never_inside_code():
    lines = [line for paragraph in wrapped("运行 `mha check --lang zh` 检查练习，然后看提示。", 12)
             for line in paragraph]
    assert "`mha check --lang zh`" in lines, lines
    assert all(not line.startswith(("，", "。")) for line in lines), lines
    assert "".join(lines).replace(" ", "") == "运行`mha check --lang zh`检查练习，然后看提示。".replace(" ", "")


def test_every_option_of_every_verb_has_its_text_in_both_languages_and_no_text_is_orphaned():
    used = set()
    for verb in VERBS:
        command = _command(verb)
        for key in (f"verb.{verb}.about", f"verb.{verb}.short"):
            assert help_text(key, "zh") and help_text(key, "en"), key
            used.add(key)
        for parameter in command.params:
            if not isinstance(parameter, click.Option):
                continue
            found = [key for key in parameter_keys(verb, parameter.name) if f"{key}.help" in _texts()]
            assert found, f"{verb} --{parameter.name}: no text in help.toml ({' or '.join(parameter_keys(verb, parameter.name))})"
            assert parameter.help is None, f"{verb} --{parameter.name}: its text belongs in help.toml, not the code"
            used.update(key for key in _texts() if key.startswith(f"{found[0]}."))
    used.add(f"verb.{ROOT}.about")
    orphans = sorted(key for key in _texts() if key not in used and not key.startswith("click."))
    assert orphans == [], f"help.toml texts no option or verb uses: {orphans}"


def test_the_sentences_a_help_text_quotes_are_the_ones_viz_draws():
    from grader.viz.draw import DEFAULT_SENTENCE
    from grader.viz.trained import DEFAULT_TRAINED_SENTENCE

    for lang in ("en", "zh"):
        said = help_text("verb.viz.options.sentence.help", lang)
        assert DEFAULT_SENTENCE in said and DEFAULT_TRAINED_SENTENCE in said, said


def test_a_bare_cli_runner_still_shows_english_pages():
    """click's CliRunner (the fast path of the other tests): English by default, Chinese with --lang zh."""
    from click.testing import CliRunner

    english = CliRunner(env={"LANG": "C.UTF-8"}).invoke(root, ["quiz", "--help"])
    chinese = CliRunner(env={"LANG": "C.UTF-8"}).invoke(root, ["quiz", "--lang", "zh", "--help"])
    assert english.exit_code == chinese.exit_code == 0
    assert "Drill concept questions" in english.output and chinese_in(english.output) == []
    assert "练习概念题" in chinese.output and _prose(chinese.output) == []
