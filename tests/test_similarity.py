"""mha similarity and mha grade --similarity: planted copies rank above independent work, through the real CLI.

The class: the mutant library's correct variants and more written for these
tests in other styles (independent work, each its own way), plus planted
copies disguised the ways a copier disguises them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, require
from grader.authoring.audit import default_library
from grader.cli import root
from grader.paths import DEFAULT_ASSIGNMENT, solution_path
from similarity_plants import as_notebook, rename_everything, reorder_functions

STYLES = FIXTURES / "similarity" / "styles"
PLANTED = {frozenset(pair) for pair in (("einsum_style", "grace"), ("loops_style", "heidi"), ("functional_style", "ivan"))}


def correct_variants() -> list[Path]:
    return sorted((default_library(DEFAULT_ASSIGNMENT) / "correct").glob("*.py")) + sorted(STYLES.glob("*.py"))


def planted_class(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for path in correct_variants():
        shutil.copy(path, folder / path.name)
    library = default_library(DEFAULT_ASSIGNMENT) / "correct"
    shutil.copy(library / "einsum_style.py", folder / "grace.py")  # an exact copy under another name
    (folder / "heidi.py").write_text(rename_everything((library / "loops_style.py").read_text()), encoding="utf-8")
    (folder / "ivan.py").write_text(reorder_functions((library / "functional_style.py").read_text()), encoding="utf-8")
    shutil.copy(solution_path(DEFAULT_ASSIGNMENT), folder / "judy.py")  # the answer key, verbatim
    return folder


def run(*args: str) -> str:
    done = CliRunner().invoke(root, [str(arg) for arg in args])
    assert done.exit_code == 0, done.output
    return done.output


def students(pair: dict) -> frozenset[str]:
    return frozenset(pair["students"])


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium with one page (tests/chromium_driver.py)."""
    from chromium_driver import Chromium, find_chromium

    binary = find_chromium()
    require(binary is not None, "Chromium is not installed (Debian: apt install chromium fonts-noto-cjk; "
                                "or set MHA_CHROMIUM)")
    browser = Chromium(binary, tmp_path / "profile")
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("similarity")
    folder = planted_class(base / "class")
    for lang in ("en", "zh"):
        run("similarity", folder, "--out", base / lang, "--lang", lang)
    return base


def test_the_disguised_copies_are_really_disguised_and_still_python(compared):
    heidi = (compared / "class" / "heidi.py").read_text()
    original = (default_library(DEFAULT_ASSIGNMENT) / "correct" / "loops_style.py").read_text()
    compile(heidi, "heidi.py", "exec")
    assert "#" not in heidi and "flat_in" in original and "flat_in" not in heidi
    ivan = (compared / "class" / "ivan.py").read_text()
    assert ivan.index("class MultiHeadAttention") < ivan.index("def softmax")


def test_every_planted_pair_ranks_above_every_independent_pair(compared):
    data = json.loads((compared / "en" / "similarity.json").read_text())
    count = len(correct_variants()) + 4
    assert data["students"] == count and data["pairs_compared"] == count * (count - 1) // 2
    scores = [pair["score"] for pair in data["pairs"]]
    assert scores == sorted(scores, reverse=True)
    top = {students(pair) for pair in data["pairs"][:len(PLANTED)]}
    assert top == PLANTED, data["pairs"][:5]
    planted_lowest = min(pair["score"] for pair in data["pairs"] if students(pair) in PLANTED)
    independent = [pair for pair in data["pairs"] if students(pair) not in PLANTED]
    assert planted_lowest >= 0.9 and all(pair["score"] < 0.35 for pair in independent), independent[:3]
    # the answer key never makes its copier look like anyone else
    assert all("judy" not in pair["students"] or pair["score"] < 0.35 for pair in data["pairs"])


def test_pairs_and_reference_matches_read_back_as_they_were_written(compared):
    from grader.similarity.compare import PairMatch, ReferenceMatch

    data = json.loads((compared / "en" / "similarity.json").read_text())
    assert data["pairs"] and all(PairMatch.from_dict(pair).to_dict() == pair for pair in data["pairs"])
    assert all(ReferenceMatch.from_dict(match).to_dict() == match for match in data["reference_matches"])


def test_the_verbatim_answer_key_is_flagged_and_only_it(compared):
    data = json.loads((compared / "en" / "similarity.json").read_text())
    flagged = [match["student"] for match in data["reference_matches"] if match["matches_answer_key"]]
    assert flagged == ["judy"]
    judy = data["reference_matches"][0]
    assert judy["student"] == "judy" and judy["score"] > 0.9 and judy["evidence"]["passages"]


def test_evidence_gives_line_ranges_of_the_same_functions_in_both_files(compared):
    data = json.loads((compared / "en" / "similarity.json").read_text())
    pair = next(pair for pair in data["pairs"] if students(pair) == {"functional_style", "ivan"})
    passages = pair["evidence"]["passages"]
    assert len(passages) >= 5
    original = (compared / "class" / "functional_style.py").read_text().splitlines()
    moved = (compared / "class" / "ivan.py").read_text().splitlines()
    for passage in passages:
        first, second = passage["first"], passage["second"]
        assert first["function"] == second["function"]
        assert original[first["start_line"] - 1:first["end_line"]] == moved[second["start_line"] - 1:second["end_line"]]
    assert {passage["first"]["function"] for passage in passages} >= {"softmax", "MultiHeadAttention.forward"}


def test_a_notebook_and_a_script_of_the_same_code_match(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for path in correct_variants()[:8]:
        shutil.copy(path, folder / path.name)
    code = (STYLES / "while_loops_style.py").read_text()
    (folder / "kim.py").write_text(code, encoding="utf-8")
    (folder / "lee").mkdir()
    (folder / "lee" / "multihead_attention.ipynb").write_text(as_notebook(code), encoding="utf-8")
    run("similarity", folder, "--out", tmp_path / "out")
    data = json.loads((tmp_path / "out" / "similarity.json").read_text())
    best = data["pairs"][0]
    assert best["students"] == ["kim", "lee"] and best["score"] > 0.9
    assert data["files"]["lee"] == "lee/multihead_attention.ipynb"
    assert all(passage["second"]["cell"].startswith("cell ") and "cell" not in passage["first"]
               for passage in best["evidence"]["passages"])
    assert all(pair["score"] < 0.35 for pair in data["pairs"][1:])


def test_shared_rare_mistakes_raise_a_pair_and_grading_is_untouched(tmp_path):
    """mha grade --similarity: two students who wrote different code with the same mistake nobody else makes
    rise, and the evidence says so; grades.csv is the same as without --similarity; feedback never mentions it."""
    folder = tmp_path / "class"
    folder.mkdir()
    for path in correct_variants()[:8]:  # not loops_style, which mia's mistake was made from
        shutil.copy(path, folder / path.name)
    mistakes = default_library(DEFAULT_ASSIGNMENT) / "mistakes"
    shutil.copy(mistakes / "attention_no_scale_loops.py", folder / "mia.py")
    shutil.copy(mistakes / "attention_no_scale.py", folder / "ned.py")
    shutil.copy(mistakes / "softmax_no_keepdims.py", folder / "oli.py")
    shutil.copy(STYLES / "dot_products_style.py", folder / "dot_products_style.py")
    # one bug no catalog id names, written two ways (same wrong numbers), and a third student's other bug
    reference = solution_path(DEFAULT_ASSIGNMENT).read_text()
    total = "np.sum(exponentials, axis=-1, keepdims=True)"
    (folder / "quinn.py").write_text(reference.replace(total, f"({total} + 0.01)"))
    stacked = (STYLES / "stacked_heads_style.py").read_text()
    divide = "return lifted / np.sum(lifted, axis=-1, keepdims=True)"
    (folder / "rosa.py").write_text(stacked.replace(divide, "total = np.sum(lifted, axis=-1, keepdims=True)\n"
                                                            "    return lifted / (0.01 + total)"))
    (folder / "sam.py").write_text(reference.replace(total, f"({total} + 0.05)"))
    (folder / "pat.py").write_text(rename_everything((STYLES / "dot_products_style.py").read_text()))
    run("grade", folder, "--out", tmp_path / "plain")
    run("grade", folder, "--out", tmp_path / "with", "--similarity", "--lang", "zh")
    assert (tmp_path / "plain" / "grades.csv").read_text() == (tmp_path / "with" / "grades.csv").read_text()
    assert "\npat,60,60,graded," in (tmp_path / "plain" / "grades.csv").read_text()  # the disguise still works
    data = json.loads((tmp_path / "with" / "similarity.json").read_text())
    run("similarity", folder, "--out", tmp_path / "code only")
    alone = json.loads((tmp_path / "code only" / "similarity.json").read_text())
    assert data["mistakes_compared"] is True and alone["mistakes_compared"] is False

    def find(pairs: list, who: set) -> tuple[int, dict]:
        unlisted = {"score": 0.0, "evidence": {"shared_mistakes": []}}  # no code in common at all
        return next(((rank, pair) for rank, pair in enumerate(pairs) if students(pair) == who), (len(pairs), unlisted))

    rank, pair = find(data["pairs"], {"mia", "ned"})
    rank_alone, pair_alone = find(alone["pairs"], {"mia", "ned"})
    assert [mistake["id"] for mistake in pair["evidence"]["shared_mistakes"]
            if mistake["kind"] == "mistake"] == ["attention-no-scale"]
    assert pair_alone["evidence"]["shared_mistakes"] == [] and pair_alone["score"] < 0.35
    assert pair["score"] > pair_alone["score"] + 0.2 and rank < rank_alone
    assert find(data["pairs"], {"pat", "dot_products_style"})[0] == 0  # the copy still ranks first
    _, same_numbers = find(data["pairs"], {"quinn", "rosa"})
    _, other_numbers = find(data["pairs"], {"quinn", "sam"})
    kinds = {mistake["kind"] for mistake in same_numbers["evidence"]["shared_mistakes"]}
    assert kinds == {"values"} and same_numbers["evidence"]["code_score"] < 0.1  # three fail those checks: not rare
    assert same_numbers["score"] >= 0.4 > find(alone["pairs"], {"quinn", "rosa"})[1]["score"]
    assert "softmax" in {m.get("function") for m in same_numbers["evidence"]["shared_mistakes"]}
    assert "values" not in {mistake["kind"] for mistake in other_numbers["evidence"]["shared_mistakes"]}
    assert data["settings"]["public_fixtures_run"] is True
    report = (tmp_path / "with" / "report.html").read_text()
    assert "id=similarity" in report and "similarity.html#pair-1" in report and "绝不是成绩" in report
    assert "绝不是成绩" in (tmp_path / "with" / "similarity.html").read_text()
    assert "id=similarity" not in (tmp_path / "plain" / "report.html").read_text()
    pages = list((tmp_path / "with" / "feedback").iterdir())
    assert len(pages) == 2 * 16
    for page in pages:
        text = page.read_text().lower()
        assert "similar" not in text and "相似" not in text and "答案" not in text and "抄" not in text, page


def test_the_page_follows_the_language(compared):
    english = (compared / "en" / "similarity.html").read_text()
    chinese = (compared / "zh" / "similarity.html").read_text()
    assert "never a grade" in english and "Matches with the answer key" in english
    assert "绝不是成绩" in chinese and "与参考答案的匹配" in chinese and "never a grade" not in chinese


def test_a_pair_reads_side_by_side_in_a_browser(compared, browser):
    for lang in ("en", "zh"):
        url = (compared / lang / "similarity.html").resolve().as_uri()
        browser.open(url)
        firsts = ("[...document.querySelectorAll('#pairs tbody tr:not([hidden])')]"
                  ".map(r => r.cells[1].textContent + '~' + r.cells[2].textContent)")
        shown = browser.evaluate(firsts)
        assert {frozenset(text.split("~")) for text in shown[:3]} == PLANTED
        scores = "[...document.querySelectorAll('#pairs tbody tr')].map(r => parseFloat(r.cells[3].textContent))"
        browser.click("#pairs th:nth-child(2)")  # student, alphabetically
        assert browser.evaluate(firsts)[0].startswith("class_helpers_tensordot_style~")
        browser.click("#pairs th:nth-child(4)")  # score, ascending
        ascending = browser.evaluate(scores)
        assert ascending == sorted(ascending) and ascending[-1] == 1.0 and ascending[0] < 0.1
        browser.click("#pairs th:nth-child(4)")  # descending
        assert browser.evaluate(scores) == sorted(ascending, reverse=True)
        browser.evaluate("(() => { const s = document.getElementById('search'); s.value = 'heidi';"
                         " s.dispatchEvent(new Event('input')); })()")
        assert browser.evaluate(firsts)[0] == "heidi~loops_style"
        assert browser.evaluate("document.querySelector('.shown').textContent") == str(len(browser.evaluate(firsts)))
        browser.click("#pairs tbody tr:not([hidden]) button.open")
        assert browser.evaluate("document.getElementById('viewer').hidden") is False
        left = browser.evaluate("document.querySelectorAll('#left .line.hit').length")
        right = browser.evaluate("document.querySelectorAll('#right .line.hit').length")
        listed = browser.evaluate("document.querySelectorAll('#passages li').length")
        assert left > 10 and right > 10 and listed >= 3
        assert "heidi" in browser.evaluate("document.getElementById('viewer-title').textContent")
        browser.click("#reference button.open")
        words = "答案" if lang == "zh" else "answer key"
        assert words in browser.evaluate("document.getElementById('right-name').textContent")
        assert browser.evaluate("document.querySelectorAll('#right .line.hit').length") > 10
        assert browser.evaluate("location.hash") == "#key-1"
        browser.open("about:blank")
        browser.open(url + "#pair-3")  # a link to one pair opens it
        assert browser.evaluate("document.getElementById('viewer').hidden") is False
        title = browser.evaluate("document.getElementById('viewer-title').textContent")
        assert set(title.split(" \u2194 ")) == set(json.loads((compared / lang / "similarity.json").read_text())
                                                    ["pairs"][2]["students"])
        assert browser.console_errors() == []
        assert [u for u in browser.requested_urls() if not u.startswith((url, "data:"))] == []


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A class with what students send besides code: markup in names and code, links, bad bytes, broken syntax."""
    base = tmp_path_factory.mktemp("hostile")
    folder = base / "class"
    folder.mkdir()
    for path in correct_variants()[:4]:
        shutil.copy(path, folder / path.name)
    code = (STYLES / "static_methods_style.py").read_text()
    payload = "# </script><script>document.title = 'owned'</script>\nBANNER = '</script><img src=x onerror=\"document.title=1\">'\n"
    (folder / "<img src=x onerror=alert(1)>.py").write_text(payload + code, encoding="utf-8")
    (folder / "tom.py").write_text(code + payload, encoding="utf-8")
    (folder / "uma.py").write_bytes(b"def softmax(x):\n    return x \xff\xfe\n")
    (folder / "vic.py").symlink_to(folder / "tom.py")
    (folder / "wes.py").write_text(code.replace("def split_heads(self, x):", "def split_heads(self, x)"))
    run("similarity", folder, "--out", base / "out")
    return base


def test_a_hostile_class_is_compared_with_every_refusal_explained(hostile):
    data = json.loads((hostile / "out" / "similarity.json").read_text())
    skipped = {item["student"]: item["reason"] for item in data["skipped"]}
    assert set(skipped) == {"uma", "vic"} and "UTF-8" in skipped["uma"] and "link" in skipped["vic"]
    assert data["students"] == 7
    pairs = {students(pair): pair["score"] for pair in data["pairs"]}
    assert pairs[frozenset({"<img src=x onerror=alert(1)>", "tom"})] > 0.9
    assert pairs[frozenset({"tom", "wes"})] > 0.6  # up to its syntax error, and the functions after it
    page = (hostile / "out" / "similarity.html").read_text()
    assert "<img src=x" not in page and page.count("</script>") == 2


def test_a_hostile_page_shows_code_as_text_in_a_browser(hostile, browser):
    url = (hostile / "out" / "similarity.html").resolve().as_uri()
    browser.open(url)
    title = browser.evaluate("document.title")
    browser.click("#pairs tbody tr:first-child button.open")
    assert browser.evaluate("document.title") == title and browser.evaluate("document.images.length") == 0
    assert "</script><img src=x" in browser.evaluate("document.getElementById('left').textContent + "
                                                    "document.getElementById('right').textContent")
    assert "<img src=x onerror=alert(1)>" in browser.evaluate("document.getElementById('viewer-title').textContent")
    assert browser.console_errors() == []


def test_usage_errors_say_what_to_type(tmp_path):
    folder = planted_class(tmp_path / "class")
    inside = CliRunner().invoke(root, ["similarity", str(folder), "--out", str(folder / "out")])
    assert inside.exit_code == 2 and "outside the submissions" in inside.output
    one_file = CliRunner().invoke(root, ["similarity", str(folder / "grace.py"), "--out", str(tmp_path / "out")])
    assert one_file.exit_code == 2 and "is a file" in one_file.output
    sharded = CliRunner().invoke(root, ["grade", str(folder), "--out", str(tmp_path / "g"), "--shard", "1/2",
                                        "--similarity"])
    assert sharded.exit_code == 2 and "mha merge" in sharded.output and not (tmp_path / "g").exists()
    (tmp_path / "nobody").mkdir()
    empty = CliRunner().invoke(root, ["similarity", str(tmp_path / "nobody"), "--out", str(tmp_path / "e")])
    assert empty.exit_code == 2 and "holds no submissions" in empty.output
    results = tmp_path / "results.json"
    results.write_text('{"not": "a list"}')
    wrong = CliRunner().invoke(root, ["similarity", str(folder), "--out", str(tmp_path / "o"), "--results", str(results)])
    assert wrong.exit_code == 2 and "is not a results.json of `mha grade`" in wrong.output


FRESH = FIXTURES / "similarity" / "fresh"
FRESH_PLANTED = {frozenset(pair) for pair in (("split_concatenate_style", "ulla"),  # its variables inlined
                                              ("broadcast_products_style", "victor"),  # new variables extracted
                                              ("nested_for_lists_style", "wendy"),  # loops as comprehensions
                                              ("pipeline_helpers_style", "yusuf"),  # its helpers folded in
                                              ("apply_along_axis_style", "aaron"),  # padded with prints, renamed
                                              ("apply_along_axis_style", "bella"),  # np.f(x) as x.f(), @ for matmul
                                              ("aaron", "bella"))}


def test_copies_rewritten_statement_by_statement_still_rank_above_every_independent_pair(tmp_path):
    """A class the other fixtures never showed the rules: eight more independent styles, and copies disguised
    by moving code between statements (inlining, extracting, comprehensions) and a key inlined and renamed."""
    folder = planted_class(tmp_path / "class")
    for path in sorted(FRESH.glob("*.py")):
        shutil.copy(path, folder / path.name)
    run("similarity", folder, "--out", tmp_path / "out")
    data = json.loads((tmp_path / "out" / "similarity.json").read_text())
    planted = PLANTED | FRESH_PLANTED
    planted_lowest = min(pair["score"] for pair in data["pairs"] if students(pair) in planted)
    independent = [pair for pair in data["pairs"] if students(pair) not in planted and "judy" not in pair["students"]
                   and "xena" not in pair["students"]]
    assert {students(pair) for pair in data["pairs"][:len(planted)]} == planted, data["pairs"][:8]
    assert planted_lowest >= 0.5 and independent[0]["score"] < planted_lowest, (planted_lowest, independent[:3])
    flagged = sorted(match["student"] for match in data["reference_matches"] if match["matches_answer_key"])
    assert flagged == ["judy", "xena"]
    victor = next(pair for pair in data["pairs"] if students(pair) == {"broadcast_products_style", "victor"})
    spans = [function_spans((folder / f"{name}.py").read_text()) for name in ("broadcast_products_style", "victor")]
    for passage in victor["evidence"]["passages"]:  # lines of the original files, in the function named
        for side, span in zip((passage["first"], passage["second"]), spans):
            start, end = span[side["function"]]
            assert start <= side["start_line"] <= side["end_line"] <= end, (side, start, end)
    softmax = next(p for p in victor["evidence"]["passages"] if p["first"]["function"] == "softmax")
    assert (softmax["first"]["start_line"], softmax["first"]["end_line"]) == (6, 9)
    assert softmax["second"]["end_line"] - softmax["second"]["start_line"] >= 5  # its six statements, in victor.py


def function_spans(text: str) -> dict[str, tuple[int, int]]:
    import ast

    spans = {}
    for node in ast.parse(text).body:
        for inner in [node] + (node.body if isinstance(node, ast.ClassDef) else []):
            if isinstance(inner, ast.FunctionDef):
                name = inner.name if inner is node else f"{node.name}.{inner.name}"
                spans[name] = (inner.lineno, inner.end_lineno)
    return spans


def test_an_advanced_exercise_compares_with_its_own_stub_and_key(tmp_path):
    """mha similarity --assignment masked_attention: its stub is boilerplate, its reference the answer key."""
    folder = tmp_path / "class"
    folder.mkdir()
    for path in sorted((FIXTURES / "similarity" / "masked").glob("*.py")):
        shutil.copy(path, folder / path.name)
    for path in sorted((default_library("masked_attention") / "correct").glob("*.py")):
        shutil.copy(path, folder / path.name)
    shutil.copy(solution_path("masked_attention"), folder / "abe.py")
    from grader.paths import exercise_path

    shutil.copy(exercise_path("masked_attention"), folder / "untouched.py")  # a student who sent the stub back
    run("similarity", folder, "--out", tmp_path / "out", "--assignment", "masked_attention")
    data = json.loads((tmp_path / "out" / "similarity.json").read_text())
    assert data["assignment"] == "masked_attention" and data["reference_file"] == "masked_attention.py"
    planted = {frozenset(("large_negative_style", "yara")), frozenset(("loop_rows_style", "zoe"))}
    assert {students(pair) for pair in data["pairs"][:2]} == planted, data["pairs"][:4]
    assert all(pair["score"] < 0.35 for pair in data["pairs"][2:])
    assert all("untouched" not in pair["students"] for pair in data["pairs"])  # the stub never counts
    assert [m["student"] for m in data["reference_matches"] if m["matches_answer_key"]] == ["abe"]
    assert all(m["student"] != "untouched" or m["score"] < 0.1 for m in data["reference_matches"])


def test_the_progress_bar_names_its_stages_in_the_run_language(capsys):
    from grader.similarity.outputs import StageBar

    for lang, stage, word in (("en", "fingerprinting", "fingerprinting"), ("zh", "fingerprinting", "提取指纹"),
                              ("zh", "evidence", "整理证据"), ("zh", "fixtures", "公开测试数据")):
        bar = StageBar(enabled=True, lang=lang)
        bar.begin(stage, 2)
        bar.advance()
        bar.advance()
        bar.end()
        shown = capsys.readouterr().err
        assert word in shown and "2/2" in shown, shown


def test_the_terminal_counts_one_bug_seen_by_several_checks_once(tmp_path):
    from grader.similarity.compare import PairMatch, SimilarityReport
    from grader.similarity.mistakes import SharedMistake
    from grader.similarity.outputs import summary_lines

    signs = (SharedMistake("mistake", "attention-no-scale", "attention-no-scale", 2),
             SharedMistake("failure", "test_attention_one", "numeric-mismatch", 2, "scaled_dot_product_attention"),
             SharedMistake("values", "test_attention_one", "out = [1.0]", 2, "scaled_dot_product_attention"),
             SharedMistake("values", "test_forward_one", "out = [2.0]", 2, "scaled_dot_product_attention"))
    pair = PairMatch(("mia", "ned"), 0.55, 0.0, (0.0, 0.0), (), signs)
    report = SimilarityReport(DEFAULT_ASSIGNMENT, (), (pair,), (), 1)
    lines = summary_lines(report, out=tmp_path, lang="en")
    assert "2 shared rare mistakes" in lines[1], lines
    assert "2 个共同的罕见错误" in summary_lines(report, out=tmp_path, lang="zh")[1]
