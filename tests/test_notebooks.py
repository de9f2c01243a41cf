"""The tutorial notebooks: generated from one source, and they really run on a Jupyter kernel."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROJECT
from grader.authoring.notebooks import build_notebook, notebook_path, notebook_text, reference_parts, stub_cell_code
from grader.authoring.tutorial import TUTORIAL_DIR, load_tutorial
from grader.errors import ContentError, UsageError
from grader.notebook import CheckReport, calls_grader, strip_magics
from grader.render.notebook_html import result_to_html
from grader.results import SubmissionResult, TestResult

LANGS = ("en", "zh")
SOLUTION = PROJECT / "solutions" / "multihead_attention.py"
SCRIPT_STUB = PROJECT / "exercises" / "multihead_attention.py"
# The split_heads bug of the catalog: reshape straight to (B, H, T, d_k).
CORRECT_SPLIT = ("x = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, T, H, d_k)\n"
                 "        return x.transpose(0, 2, 1, 3)  # (B, H, T, d_k)")
BUGGY_SPLIT = "return x.reshape(batch, self.num_heads, length, self.d_k)"


def code_cells(notebook) -> dict[str, str]:
    return {cell["id"]: "".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"}


def definitions(source: str) -> dict[str, str]:
    """Every function and method of ``source`` by name, as written."""
    tree = ast.parse(source)
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            found[node.name] = ast.get_source_segment(source, node)
    return found


# ---- one source, no drift ------------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_notebook_files_are_exactly_what_the_generator_writes(lang):
    on_disk = notebook_path(lang).read_text(encoding="utf-8")
    assert on_disk == notebook_text(build_notebook(lang=lang, filling="stub")), \
        f"{notebook_path(lang)} drifted from its source; run `python -m grader.authoring.notebooks`"


@pytest.mark.parametrize("lang", LANGS)
def test_stub_cells_match_the_script_stub_function_by_function(lang):
    notebook = json.loads(notebook_path(lang).read_text(encoding="utf-8"))
    in_notebook = {}
    for cell_id, code in code_cells(notebook).items():
        if cell_id.startswith("exercise-"):
            in_notebook.update(definitions(code))
    script = definitions(SCRIPT_STUB.read_text(encoding="utf-8"))
    assert set(in_notebook) == set(script) == {"softmax", "scaled_dot_product_attention", "__init__",
                                               "split_heads", "combine_heads", "forward"}
    for name, code in script.items():
        assert in_notebook[name] == code, name


def test_every_reference_function_appears_once_in_the_layout():
    parts = reference_parts(SOLUTION.read_text(encoding="utf-8"))
    used = [name for cell in load_tutorial().cells if cell.kind == "stub" for name in cell.parts]
    assert sorted(used) == sorted(name for name in parts if name != "imports")


def test_solution_and_course_fillings_keep_the_reference_code():
    parts = reference_parts(SOLUTION.read_text(encoding="utf-8"))
    names = ("MultiHeadAttention.split_heads", "MultiHeadAttention.combine_heads")
    solution = stub_cell_code(names, parts, "solution", origin="test")
    assert "### BEGIN SOLUTION" not in solution and "NotImplementedError" not in solution
    assert solution.startswith("class MultiHeadAttention(MultiHeadAttention):")
    assert CORRECT_SPLIT in solution
    course = stub_cell_code(("MultiHeadAttention",), parts, "nbgrader", origin="test")
    region = course.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    assert "raise ValueError" in region and "HINT" not in course
    assert "NotImplementedError" not in course  # the constructor must still build the object
    softmax = stub_cell_code(("softmax",), parts, "nbgrader", origin="test")
    assert softmax.rstrip().endswith('raise NotImplementedError("softmax: not implemented yet / 尚未实现")')
    assert softmax.index("# Hint:") < softmax.index("### BEGIN SOLUTION")


def test_check_cells_are_locked_test_cells_that_graders_skip():
    from grader.sandbox.source import read_submission

    notebook = json.loads(notebook_path("en").read_text(encoding="utf-8"))
    checks = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"
              and "from grader" in "".join(cell["source"])]
    assert len(checks) >= 6
    for cell in checks:
        meta = cell["metadata"]["nbgrader"]
        assert (meta["grade"], meta["solution"], meta["locked"], meta["points"]) == (True, False, True, 0)
    read = read_submission(notebook_path("en"))
    assert not any("grader" in cell.source for cell in read.cells)


def test_chinese_notebook_has_chinese_prose_and_chinese_checks():
    notebook = json.loads(notebook_path("zh").read_text(encoding="utf-8"))
    markdown = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    assert "多头注意力" in markdown and "d_k = \\frac{D}{H}" in markdown
    assert code_cells(notebook)["check-softmax"] == 'from grader import check\ncheck("softmax", lang="zh")'
    # soft-wrapped Chinese would render with stray spaces between characters
    assert not re.search(r"[\u4e00-\u9fff，。；：]\n[\u4e00-\u9fff]", markdown)


def test_tutorial_content_errors_name_the_file_and_key(tmp_path):
    folder = tmp_path / "tutorial"
    shutil.copytree(TUTORIAL_DIR, folder)
    text = (folder / "zh.toml").read_text(encoding="utf-8")
    (folder / "zh.toml").write_text(text.replace("same_cost = '''", "same_costs = '''"), encoding="utf-8")
    load_tutorial.cache_clear()
    try:
        with pytest.raises(ContentError, match=r"zh\.toml: missing key 'text\.same_cost'"):
            load_tutorial(folder)
    finally:
        load_tutorial.cache_clear()


# ---- pieces of check() that need no kernel --------------------------------------------------
def test_grader_cells_are_recognized_and_magics_dropped():
    assert calls_grader('from grader import check\ncheck("softmax")')
    assert calls_grader('check("softmax")\ncheck()')
    assert calls_grader("import grader.notebook as nc")
    assert not calls_grader("def check(x):\n    return x\nvalue = check(3)")
    assert not calls_grader("import numpy as np")
    code, notes = strip_magics("%matplotlib inline\nx = 1\n!ls", "In [3]")
    assert code == "\nx = 1\n\n" and len(notes) == 2 and notes[0].startswith("In [3]")
    assert strip_magics("%%time\nx = 1", "In [4]")[0] == ""


def test_html_escapes_student_text_and_marks_each_outcome():
    test = TestResult(name="test_softmax_rows", function="softmax", outcome="failed", score=0.0, max_score=2.0,
                      misconception="softmax-unstable", message="got <script>alert(1)</script>")
    result = SubmissionResult(assignment="multihead_attention", student="s", status="graded", error=None, score=0.0, max_score=2.0,
                              misconceptions=("softmax-unstable",), tests=(test,), notes=("In [2] <b>",))
    page = result_to_html(result, "zh", title="softmax 的检查")
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;" in page
    assert "data-passed='false'" in page and "data-misconception='softmax-unstable'" in page
    assert "原因" in page and "提示" in page
    assert CheckReport(result, page)._repr_html_() == page


def test_check_outside_a_notebook_says_what_to_do():
    from grader.notebook import check

    with pytest.raises(UsageError, match="mha check"):
        check("softmax", lang="en")
    with pytest.raises(UsageError, match="split_head"):
        check("split_head", lang="en")


@pytest.mark.parametrize("script", ["worker_main.py", "forkserver.py"])
def test_grader_calls_inside_a_grading_worker_do_nothing(monkeypatch, script):
    """A submitted cell that calls check() must not start a grading inside the worker."""
    import types

    from grader.notebook import autograde, check, show_heads

    worker = types.ModuleType("__main__")
    worker.__file__ = f"/somewhere/grader/{script}"
    monkeypatch.setitem(sys.modules, "__main__", worker)
    assert check("softmax") is None and autograde("softmax") == 0.0 and show_heads() is None


def test_importing_grader_stays_light_and_check_comes_on_demand():
    code = ("import sys, grader; light = 'grader.notebook' not in sys.modules; "
            "from grader import check; print(light, check.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "grader.notebook"]
    with pytest.raises(AttributeError):
        import grader

        grader.no_such_name  # noqa: B018 - the attribute access is the test


# ---- real kernels -------------------------------------------------------------------------
def execute(notebook, folder: Path):
    from nbclient import NotebookClient

    NotebookClient(notebook, timeout=180, kernel_name="python3", allow_errors=False,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return notebook


def check_outputs(notebook) -> dict[str, str]:
    """The HTML each check cell showed, by cell id."""
    shown = {}
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.id.startswith("check-"):
            html = [output.data["text/html"] for output in cell.outputs if "text/html" in output.get("data", {})]
            assert len(html) == 1, (cell.id, cell.outputs)
            shown[cell.id] = html[0]
    return shown


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Each language's notebook run on a kernel, with the stubs and with the solutions."""
    import nbformat

    folder = tmp_path_factory.mktemp("kernel")
    runs = {}
    for lang in LANGS:
        for filling in ("stub", "solution"):
            notebook = execute(build_notebook(lang=lang, filling=filling), folder)
            path = folder / f"{lang}-{filling}.ipynb"
            nbformat.write(notebook, path)
            runs[lang, filling] = (notebook, path)
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_with_stubs_every_check_reports_not_implemented(executed, lang):
    notebook, _ = executed[lang, "stub"]
    shown = check_outputs(notebook)
    assert len(shown) == 5
    for cell_id, html in shown.items():
        outcomes = re.findall(r"data-misconception='([\w-]*)'><td[^>]*>", html)
        assert outcomes and set(outcomes) == {"not-implemented"}, (cell_id, outcomes)
        assert "data-passed='false'" in html
    heatmaps = next(cell for cell in notebook.cells if cell.id == "heatmaps")
    notes = [output.data["text/html"] for output in heatmaps.outputs if "text/html" in output.get("data", {})]
    assert len(notes) == 1 and "forward" in notes[0]  # a note, not a traceback (beside any font warning)
    assert ("尚未实现" not in notes[0]) if lang == "en" else ("not implemented yet" not in notes[0])  # one language


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_with_solutions_every_check_passes(executed, lang):
    notebook, _ = executed[lang, "solution"]
    shown = check_outputs(notebook)
    assert len(shown) == 5
    for cell_id, html in shown.items():
        assert "data-passed='true'" in html, cell_id
    full = shown["check-all"]
    score, maximum = re.search(r"data-score='([\d.]+)' data-max-score='([\d.]+)'", full).groups()
    assert score == maximum and float(maximum) > 0
    assert ("全部检查通过" if lang == "zh" else "Every check passed") in full
    heatmaps = next(cell for cell in notebook.cells if cell.id == "heatmaps")
    assert sum("image/png" in output.get("data", {}) for output in heatmaps.outputs) == 2


@pytest.mark.slow
@pytest.mark.parametrize("filling", ("stub", "solution"))
def test_grading_the_executed_notebook_gives_the_scripts_score(executed, filling):
    from grader.grading.grade import grade_submission

    _, path = executed["en", filling]
    script = SCRIPT_STUB if filling == "stub" else SOLUTION
    from_notebook = grade_submission(path=path, visibility="all", seed=11)
    from_script = grade_submission(path=script, visibility="all", seed=11)
    assert from_notebook.status == from_script.status == "graded"
    assert from_notebook.score == from_script.score
    assert [t.outcome for t in from_notebook.tests] == [t.outcome for t in from_script.tests]
    assert from_notebook.notes == ()  # check and heatmap cells were skipped, nothing else failed


@pytest.mark.slow
def test_a_buggy_notebook_gets_the_same_score_and_diagnosis_as_the_same_bug_in_a_script(tmp_path):
    import nbformat

    notebook = build_notebook(lang="en", filling="solution")
    for cell in notebook.cells:
        if CORRECT_SPLIT in cell.source:
            cell.source = cell.source.replace(CORRECT_SPLIT, BUGGY_SPLIT)
    execute(notebook, tmp_path)
    shown = check_outputs(notebook)
    assert "data-misconception='split-heads-no-transpose'" in shown["check-split_heads-combine_heads"]
    path = tmp_path / "buggy.ipynb"
    nbformat.write(notebook, path)
    script = tmp_path / "buggy.py"
    script.write_text(SOLUTION.read_text(encoding="utf-8").replace(CORRECT_SPLIT, BUGGY_SPLIT), encoding="utf-8")
    results = []
    for file in (path, script):  # through the installed command, as a student or instructor would
        done = subprocess.run(["mha", "check", str(file), "--json", "--all"], capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        results.append(json.loads(done.stdout))
    assert results[0]["score"] == results[1]["score"] < results[0]["max_score"]
    assert results[0]["misconceptions"] == results[1]["misconceptions"] == ["split-heads-no-transpose"]
    in_notebook = re.search(r"data-score='([\d.]+)'", shown["check-all"]).group(1)
    public = subprocess.run(["mha", "check", str(script), "--json"], capture_output=True, text=True)
    assert float(in_notebook) == json.loads(public.stdout)["score"]


@pytest.mark.slow
def test_a_kernels_checks_share_one_fork_server_and_each_sees_the_code_run_so_far(tmp_path):
    """In a real kernel: checks after the first reuse the kernel's fork server (each still in a fresh worker,
    so a redefined function is what the next check sees); a server that died is started again; the server
    ends with the kernel."""
    import os
    import time

    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path),
                                       env={**os.environ, "MHA_CACHE_DIR": str(tmp_path / "cache")})

    def run(code: str) -> str:
        shown = []
        reply = client.execute_interactive(code, timeout=180, output_hook=shown.append)
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(str(message["content"].get("data", {}).get("text/html", "")
                           or message["content"].get("text", "")) for message in shown)

    def server_pid() -> int:
        return int(run("import grader.notebook as _n; print(_n._KERNEL['server'].info['pid'])").split()[-1])

    try:
        run(SOLUTION.read_text(encoding="utf-8"))
        run("from grader import check")
        assert "data-passed='true'" in run("check()")
        first = server_pid()
        broken = SOLUTION.read_text(encoding="utf-8").replace(CORRECT_SPLIT, BUGGY_SPLIT)
        run(broken)
        assert "data-misconception='split-heads-no-transpose'" in run("check('split_heads')")
        assert server_pid() == first
        run(SOLUTION.read_text(encoding="utf-8"))
        os.kill(first, 9)
        while _alive(first):  # gone, or a zombie its parent (the kernel) has not reaped yet
            time.sleep(0.05)
        assert "data-passed='true'" in run("check()")  # a new server, the same answer
        second = server_pid()
        assert second != first
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(second):
        time.sleep(0.1)
    assert not _alive(second)  # the server ended with the kernel


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_only_the_notebooks_whose_text_changed_are_written(tmp_path):
    from grader.authoring.notebooks import write_changed

    same, changed, new = tmp_path / "same.ipynb", tmp_path / "changed.ipynb", tmp_path / "more" / "new.ipynb"
    same.write_text("kept", encoding="utf-8")
    changed.write_text("old", encoding="utf-8")
    before = same.stat().st_mtime_ns
    assert write_changed({same: "kept", changed: "new", new: "made"}) == [changed, new]
    assert changed.read_text(encoding="utf-8") == "new" and new.read_text(encoding="utf-8") == "made"
    assert same.stat().st_mtime_ns == before


def test_a_kernel_without_code_scores_zero_of_the_points_of_the_checks_asked_for(monkeypatch):
    import grader.notebook as notebook
    from grader.grading.grade import plan_checks

    def no_code():
        raise notebook.NoCode()
    monkeypatch.setattr(notebook, "kernel_source", no_code)
    result = notebook.grade_kernel(functions=("softmax",), visibility="public", lang="en")
    softmax = plan_checks(assignment="multihead_attention", visibility="public", functions=("softmax",)).max_score
    every = plan_checks(assignment="multihead_attention", visibility="public").max_score
    assert result.status == "error" and result.score == 0 and result.max_score == softmax and 0 < softmax < every
