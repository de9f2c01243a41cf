"""One vocabulary and one typography in both languages, for every text the project shows.

The glossary (grader/content/glossary.toml) fixes a Chinese term for each
concept. Every bilingual text of grader/content and of the exercise folders
(the question bank, the catalog, check messages, quiz, feedback, notebook and
release texts, the figures' texts, the syllabus and the tutorial) is read as (English, Chinese)
pairs: where the English uses a term, the Chinese must use its term; a
variant the glossary rules out never appears; and Chinese prose follows the
typography rules written at the top of the glossary.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator

import pytest

from grader.paths import ASSIGNMENTS_DIR, CONTENT_DIR

GLOSSARY = tomllib.loads((CONTENT_DIR / "glossary.toml").read_text(encoding="utf-8"))
# Code, placeholders and formulas are not prose: code becomes a Latin "X" (it
# must be spaced like a word), placeholders an invisible separator (what they
# stand for may be Chinese), formulas vanish.
CODE = re.compile(r"```.*?```|`[^`]*`", re.S)
FORMULA = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S)
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
HAN = r"\u3400-\u9fff"
TYPOGRAPHY = {
    "half-width punctuation after Chinese": re.compile(rf"[{HAN}][,;:?!]|[{HAN}]\.(?!\.)"),
    "half-width punctuation before Chinese": re.compile(rf"[,;:?!] *[{HAN}]"),
    "no space between Chinese and Latin": re.compile(rf"[{HAN}][A-Za-z0-9(\[]|[A-Za-z0-9)\]][{HAN}]"),
    "a space between Chinese characters": re.compile(rf"[{HAN}] +[{HAN}]"),
    "a space beside full-width punctuation": re.compile(r" [，。；：？！、）”’]|[，。；：？！、（“‘] | “|” "),
    "ASCII brackets around Chinese": re.compile(rf"\([^()]*[{HAN}][^()]*\)"),
}


def bilingual_texts() -> Iterator[tuple[str, str, str]]:
    """(where, English, Chinese) for every text of grader/content and of the exercise folders.

    ``where`` starts with the file's path in its folder (``checks.toml``, ``questions/heads.toml``).
    """
    for path in sorted(CONTENT_DIR.rglob("*.toml")):
        if path.name == "glossary.toml":
            continue
        yield from _pairs(tomllib.loads(path.read_text(encoding="utf-8")), path.relative_to(CONTENT_DIR).as_posix())
    for folder in sorted(ASSIGNMENTS_DIR.glob("[!_]*/")):
        for path in sorted(folder.glob("*.toml")):
            yield from _pairs(tomllib.loads(path.read_text(encoding="utf-8")), path.name)
    yield from _tutorial_pairs()


def _tutorial_pairs() -> Iterator[tuple[str, str, str]]:
    """The notebook's texts: the core exercise's and every other exercise's section (tutorial/section.toml)."""
    from grader.authoring.tutorial import load_tutorial

    english, chinese = (load_tutorial().texts[lang] for lang in ("en", "zh"))
    for table in ("text", "phrase"):
        for key, text in english.get(table, {}).items():
            yield f"tutorial/{table}.{key}", text, chinese[table][key]
    for key, code in chinese.get("code", {}).items():  # code cells: their Chinese comments and strings
        said = [part for line in code.splitlines() for part in re.findall(r"#(.*)$|\"([^\"]*)\"|'([^']*)'", line)]
        yield f"tutorial/code.{key}", "", "\n".join("".join(groups) for groups in said
                                                    if re.search(f"[{HAN}]", "".join(groups)))


def _pairs(node, where: str) -> Iterator[tuple[str, str, str]]:
    if isinstance(node, dict):
        if isinstance(node.get("en"), str) and isinstance(node.get("zh"), str):
            yield where, node["en"], node["zh"]
        for key, value in node.items():
            if key not in ("en", "zh"):
                yield from _pairs(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _pairs(value, f"{where}[{index}]")


def prose(text: str) -> str:
    return PLACEHOLDER.sub("\u2063", FORMULA.sub("", CODE.sub("X", text)))


CODE_NEIGHBOURS = set("()[]._=*+/@-<>")


def word_uses(pattern: re.Pattern, text: str) -> list[str]:
    """The matches of ``pattern`` used as words, not as names in code (``heads * d_k``, ``--heads-subset``)."""
    found = []
    for match in pattern.finditer(text):
        before = text[:match.start()].rstrip()[-1:]
        after = text[match.end():].lstrip()[:1]
        if before not in CODE_NEIGHBOURS and after not in CODE_NEIGHBOURS:
            found.append(match.group(0))
    return found


TEXTS = list(bilingual_texts())


def test_every_content_file_is_read():
    places = {where.split(".toml")[0] for where, _, _ in TEXTS}
    assert {"questions/heads", "misconceptions", "messages", "checks", "quiz", "viz", "feedback",
            "notebook", "release", "syllabus", "tutorial/text"} <= {place.split(".")[0] for place in places}
    assert len(TEXTS) > 1500


@pytest.mark.parametrize("term", GLOSSARY["term"], ids=lambda term: term["concept"])
def test_each_term_has_one_chinese_translation(term):
    wanted = term["zh"]
    english = re.compile(term["en"], re.IGNORECASE)
    avoided = [re.compile(variant) for variant in term.get("avoid", [])]
    problems = []
    for where, en, zh in TEXTS:
        text = prose(zh)
        applies = en != zh and any(where.startswith(path) for path in term.get("only_in", [""]))
        used = word_uses(english, prose(en)) if en and applies else []
        if used and not any(word in text for word in wanted):
            problems.append(f"{where}: the English says {used[0]!r}, the Chinese has none of {wanted}")
        for variant in avoided:
            if word_uses(variant, text):
                problems.append(f"{where}: {variant.pattern!r} instead of {wanted[0]!r}")
        for rule in term.get("avoid_in", []):
            if where.startswith(rule["path"]):
                problems += [f"{where}: {word!r} is the wrong word here" for word in rule["avoid"] if word in text]
    assert problems == []


@pytest.mark.parametrize("rule", sorted(TYPOGRAPHY))
def test_chinese_typography(rule):
    pattern = TYPOGRAPHY[rule]
    found = [f"{where}: ...{prose(zh)[max(0, m.start() - 10):m.end() + 10]}..."
             for where, _, zh in TEXTS for m in pattern.finditer(prose(zh))]
    assert found == []


def test_the_rules_catch_what_they_are_for():
    """Each rule fails on the slip it names, and passes the correct spelling."""
    slips = {
        "half-width punctuation after Chinese": ("词元,键", "词元，键"),
        "half-width punctuation before Chinese": ("a, 词元", "a，词元"),
        "no space between Chinese and Latin": ("形状为(B, T)的", "形状为 (B, T) 的"),
        "a space between Chinese characters": ("对 或 错", "对或错"),
        "a space beside full-width punctuation": ("词元 ，键", "词元，键"),
        "ASCII brackets around Chinese": ("(3 位有效数字)", "（3 位有效数字）"),
    }
    assert set(slips) == set(TYPOGRAPHY)
    for rule, (wrong, right) in slips.items():
        assert TYPOGRAPHY[rule].search(prose(wrong)), rule
        assert not TYPOGRAPHY[rule].search(prose(right)), rule
    assert prose("用 `mha quiz` 复习，共 {count} 题") == "用 X 复习，共 \u2063 题"
