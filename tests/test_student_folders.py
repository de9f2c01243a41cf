"""`mha check` with no file, typed in whatever folder the student's terminal opened in.

The release is installed with ``pip install .`` from its folder; a later
terminal opens in the student's home. The check finds ``exercises/`` in the
current folder, the two above it, or the folder pip installed the package
from (its ``direct_url.json``); where none holds it, the message says where
it looked and what to do. (The installed release itself is run from another
folder in ``test_student_path_workflow.py``'s Linux leg.)
"""

import json
import shutil

import pytest
from click.testing import CliRunner

from conftest import PROJECT
from grader import paths
from grader.cli import root

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"


@pytest.mark.parametrize("url, windows, expected", [
    ("file:///home/ada/mha%20lab", False, "/home/ada/mha lab"),
    ("file:///C:/Users/%E5%BC%A0%E4%B8%89/%E4%BD%9C%E4%B8%9A", True, "C:/Users/张三/作业"),
    ("file://localhost/srv/release", False, "/srv/release"),
    ("file:///C:/release", False, "/C:/release"),  # a drive only means one on Windows
    ("https://example.org/mha-lab.tar.gz", False, None),
    ("file://fileserver/share/release", True, None),  # another machine's folder
])
def test_a_file_url_becomes_the_local_folder_it_names(url, windows, expected):
    assert paths.file_url_path(url, windows=windows) == expected


def test_the_folder_pip_installed_from_is_read_from_direct_url(monkeypatch, tmp_path):
    """site-packages as pip leaves it: the package, and beside it its dist-info with direct_url.json."""
    release = tmp_path / "作业 一"
    release.mkdir()
    site = tmp_path / "site-packages"
    (site / "grader").mkdir(parents=True)
    record = site / "mha_lab-1.0.dist-info"
    record.mkdir()
    monkeypatch.setattr(paths, "PACKAGE_DIR", site / "grader")

    def recorded(text):
        (record / "direct_url.json").write_text(text, encoding="utf-8")
        return paths.installed_from()

    url = release.as_uri()
    assert recorded(json.dumps({"url": url, "dir_info": {}})) == release
    assert recorded(json.dumps({"url": url, "archive_info": {}})) is None  # a wheel or sdist file, not a folder
    assert recorded(json.dumps({"url": (tmp_path / "gone").as_uri(), "dir_info": {}})) is None
    assert recorded(json.dumps({"url": "file:///%FF", "dir_info": {}})) is None
    assert recorded("not json") is None
    (record / "direct_url.json").unlink()
    assert paths.installed_from() is None  # from an index: nothing recorded


@pytest.fixture
def elsewhere(monkeypatch, tmp_path):
    """A terminal opened in a folder of its own, with no checkout's exercises to fall back on."""
    home = tmp_path / "home" / "ada"
    home.mkdir(parents=True)
    monkeypatch.chdir(home)
    monkeypatch.setenv("MHA_EXERCISES", str(tmp_path / "no-checkout"))
    monkeypatch.setattr(paths, "installed_from", lambda: None)
    return home


@pytest.mark.parametrize("lang, words", [("en", ("was found in", "README.md")), ("zh", ("没有找到", "README.md"))])
def test_no_exercises_folder_anywhere_says_where_it_looked_and_what_to_do(elsewhere, lang, words):
    done = CliRunner().invoke(root, ["check", "--lang", lang])
    assert done.exit_code == 2, done.output
    assert str(elsewhere) in done.output and str(elsewhere.parent) in done.output
    assert "exercises/multihead_attention.py" in done.output and "mha check path/to/multihead_attention.py" in done.output
    assert all(word in done.output for word in words)
    assert "site-packages" not in done.output and "Traceback" not in done.output


def test_a_check_in_another_folder_finds_the_release_it_was_installed_from(elsewhere, monkeypatch, tmp_path):
    release = tmp_path / "Users" / "张三" / "作业 一"
    (release / "exercises").mkdir(parents=True)
    shutil.copy(REFERENCE, release / "exercises" / "multihead_attention.py")
    monkeypatch.setattr(paths, "installed_from", lambda: release)
    done = CliRunner().invoke(root, ["check", "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)
    assert result["score"] == result["max_score"] > 0
    assert result["file"].endswith("multihead_attention.py") and "张三" in result["file"]
