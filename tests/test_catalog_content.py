"""The misconception catalog's data file: complete, bilingual, ids as in DESIGN.md."""

import re
import tomllib

import pytest

from grader.content.catalog import catalog_files

# The contract ids from DESIGN.md, "Misconception catalog", spelled out literally
# so a rename in the data file cannot go unnoticed.
MISCONCEPTION_IDS = {
    "softmax-unstable",
    "softmax-wrong-axis",
    "softmax-global-max",
    "softmax-no-keepdims",
    "softmax-mutates-input",
    "attention-no-scale",
    "attention-wrong-scale",
    "attention-wrong-transpose",
    "attention-softmax-wrong-axis",
    "attention-returns-scores",
    "attention-wrong-value-product",
    "split-heads-no-transpose",
    "split-heads-interleaved",
    "split-heads-wrong-axes",
    "split-heads-hardcoded-shape",
    "combine-heads-no-transpose",
    "combine-heads-wrong-order",
    "mha-no-divisibility-check",
    "mha-no-output-projection",
    "mha-wrong-projection",
    "mha-ignores-key-value",
    "mha-wrong-weights-returned",
    "attention-mutates-input",
    "mha-mutates-input",
}
OUTCOME_IDS = {
    "not-implemented",
    "wrong-type",
    "wrong-shape",
    "numeric-mismatch",
    "error",
    "timeout",
    "load-error",
}
TEXT_KEYS = ("title", "explanation", "hint")
LANGUAGES = ("en", "zh")
CJK_CHARACTER = re.compile(r"[\u4e00-\u9fff]")


def expected_function(misconception_id: str) -> str:
    """The student-API function a catalog id belongs to, from its prefix."""
    if misconception_id == "mha-no-divisibility-check":
        return "__init__"
    for prefix, function in (
        ("softmax-", "softmax"),
        ("attention-", "scaled_dot_product_attention"),
        ("split-heads-", "split_heads"),
        ("combine-heads-", "combine_heads"),
        ("mha-", "forward"),
    ):
        if misconception_id.startswith(prefix):
            return function
    raise AssertionError(f"no function rule for {misconception_id!r}")


@pytest.fixture(scope="module")
def catalog():
    """The catalog files read as one: the generic outcomes and every exercise folder's mistakes."""
    merged = {"misconception": [], "outcome": []}
    for path in catalog_files():
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        assert data["schema_version"] == 1, path
        merged["schema_version"] = data["schema_version"]
        for table in ("misconception", "outcome"):
            merged[table] += data.get(table, [])
    return merged


def all_entries(catalog):
    return catalog["misconception"] + catalog["outcome"]


def test_schema_version_is_one(catalog):
    assert catalog["schema_version"] == 1


def test_misconception_ids_include_the_design_and_extend_only_registered_exercises(catalog):
    from grader.grading.assignment import ASSIGNMENTS

    ids = [entry["id"] for entry in catalog["misconception"]]
    assert MISCONCEPTION_IDS <= set(ids)
    functions = {function for exercise in ASSIGNMENTS.values() for function in exercise.functions}
    extra = {entry["id"]: entry["function"] for entry in catalog["misconception"] if entry["id"] not in MISCONCEPTION_IDS}
    assert {identifier: function for identifier, function in extra.items() if function not in functions} == {}


def test_every_generic_outcome_is_present(catalog):
    assert {entry["id"] for entry in catalog["outcome"]} == OUTCOME_IDS


def test_ids_are_unique_across_both_tables(catalog):
    ids = [entry["id"] for entry in all_entries(catalog)]
    duplicates = sorted({entry_id for entry_id in ids if ids.count(entry_id) > 1})
    assert duplicates == []


def test_every_misconception_names_its_function(catalog):
    for entry in catalog["misconception"]:
        if entry["id"] in MISCONCEPTION_IDS:  # the advanced track's ids are checked against its exercises above
            assert entry["function"] == expected_function(entry["id"]), entry["id"]
    for entry in catalog["outcome"]:
        assert "function" not in entry, entry["id"]


def test_every_entry_has_six_non_empty_texts(catalog):
    for entry in all_entries(catalog):
        for key in TEXT_KEYS:
            assert set(entry[key]) == set(LANGUAGES), (entry["id"], key)
            for language in LANGUAGES:
                text = entry[key][language]
                assert isinstance(text, str) and text.strip(), (entry["id"], key, language)


def test_chinese_texts_contain_chinese_characters(catalog):
    for entry in all_entries(catalog):
        for key in TEXT_KEYS:
            assert CJK_CHARACTER.search(entry[key]["zh"]), (entry["id"], key)


def test_titles_are_short(catalog):
    for entry in all_entries(catalog):
        assert len(entry["title"]["en"]) < 70, entry["id"]


def test_bilingual_loader_names_the_file_and_the_key(tmp_path):
    from grader.content.loader import load_bilingual
    from grader.errors import ContentError

    path = tmp_path / "texts.toml"
    path.write_text('schema_version = 1\n[text.hello]\nen = "hi"\n', encoding="utf-8")
    with pytest.raises(ContentError, match=r"texts.toml: text.hello lacks the zh text"):
        load_bilingual(path, "text")
    path.write_text('schema_version = 2\n', encoding="utf-8")
    with pytest.raises(ContentError, match="schema_version must be 1"):
        load_bilingual(path, "text")
