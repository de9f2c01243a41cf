"""The paged KV-cache exercise beyond what every exercise is checked for (tests/test_advanced_tracks.py)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import advanced_track as track
from conftest import PROJECT, mutants
from grader.cli import root

ASSIGNMENT = "paged_kv_cache"


def _cases():
    from grader.assignments.paged_kv_cache import cases as paged

    return paged.public_cases()


def _results(case) -> dict:
    """The readouts of a stateful case by the step that made them."""
    return {f"{path}{args[0] if args else ''}#{index}": value
            for index, ((path, args, _), value) in enumerate(zip(case.calls, case.expected))}


def test_the_cases_hold_the_situations_the_checks_are_about():
    """Tables never in the pool's order, a partial last block, one exactly full, a reused block whose
    old slots are not zero, and scores far past exp's range."""
    from grader.grading.reference import load_reference

    cases = _cases()
    b = cases["slots/table"].args[2]
    table = cases["slots/table"].args[0]
    assert not np.array_equal(table, np.sort(table))
    assert cases["gather/partial"].args[2] % b and cases["gather/whole-blocks"].args[2] % b == 0
    turns = _results(cases["cache/in-turns"])
    tables = [value for key, value in turns.items() if key.startswith("block_table")]
    assert all(np.all(np.diff(t) < 0) for t in tables)  # a stack hands out falling numbers
    assert not set(tables[0]) & set(tables[1])  # no block held twice
    # the reused case: c takes a's freed blocks, and its last block still holds a's keys past c's length
    reference = load_reference(ASSIGNMENT)
    reuse = cases["cache/reuse"]
    cache = reference.PagedKVCache(*reuse.init)
    for path, args, _ in reuse.calls[:-2]:
        if path == "free":
            a_table = list(cache.block_tables["a"])
        getattr(cache, path)(*args)
    c_table, c_length = cache.block_tables["c"], cache.lengths["c"]
    assert set(c_table) <= set(a_table)  # the pool held a's and b's blocks only: c reuses a's
    assert c_length % b and len(c_table) * b > c_length
    stale = cache.key_blocks[c_table[-1], c_length % b:]
    assert np.all(np.abs(stale) > 0)  # another sequence's keys, not zeros
    query, keys = cases["attention/large-scores"].args[:2]
    scores = np.einsum("hd,lhd->hl", query, keys) / np.sqrt(query.shape[-1])
    assert np.allclose(scores.max(axis=-1), 1000.0) and np.all(np.isfinite(cases["attention/large-scores"].expected))


def test_the_reference_matches_plain_attention_over_each_sequence_under_random_traffic():
    """An independent model: each sequence's keys kept in a plain list; appends of random sizes in a random
    order, frees and reuse; attend must equal softmax attention over the list, and no block is held twice."""
    from grader.grading.reference import load_reference

    reference = load_reference(ASSIGNMENT)
    rng = np.random.default_rng(11)
    for trial in range(20):
        b, H, d_k = int(rng.integers(2, 6)), int(rng.integers(1, 4)), int(rng.integers(2, 7))
        cache = reference.PagedKVCache(64, b, H, d_k)
        plain: dict[str, tuple[list, list]] = {}
        for step in range(30):
            seq = f"s{int(rng.integers(0, 4))}"
            if seq in plain and rng.random() < 0.15:
                cache.free(seq)
                del plain[seq]
                continue
            count = int(rng.integers(1, 2 * b + 2))
            keys, values = rng.normal(size=(count, H, d_k)), rng.normal(size=(count, H, d_k))
            cache.append(seq, keys, values)
            stored = plain.setdefault(seq, ([], []))
            stored[0].extend(keys)
            stored[1].extend(values)
            held = [block for table in cache.block_tables.values() for block in table]
            assert len(held) == len(set(held)) and not set(held) & set(cache.free_blocks)
            assert len(held) + len(cache.free_blocks) == 64
            for name, (k, v) in plain.items():
                assert len(cache.block_tables[name]) == -(-len(k) // b)  # ceil: exactly the blocks needed
                query = rng.normal(size=(H, d_k))
                K, V = np.stack(k), np.stack(v)  # (L, H, d_k)
                scores = np.einsum("hd,lhd->hl", query, K) / np.sqrt(d_k)
                weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights /= weights.sum(axis=-1, keepdims=True)
                assert np.allclose(cache.attend(name, query), np.einsum("hl,lhd->hd", weights, V)), (trial, step)


def test_hidden_sizes_are_distinct_and_vary_by_seed():
    from grader.assignments.paged_kv_cache.cases import draw_sizes

    sizes = [draw_sizes(np.random.default_rng(seed)) for seed in range(40)]
    assert all(len({size.N, size.b, size.H, size.d_k}) == 4 and size.b >= 2 and size.H >= 2 for size in sizes)
    assert len(set(sizes)) > 10


def test_a_wrong_slot_mapping_is_named_in_the_functions_that_use_it():
    """The swap in slot_mapping is named there and in gather, which reads the slots it gives; the catalog
    names one mistake for the whole submission."""
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "paged_slot_swapped_vectorised.py", ASSIGNMENT)
    named = {test["function"] for test in result["tests"] if test["misconception"] == "paged-slot-swapped"}
    assert {"slot_mapping", "gather"} <= named
    assert result["misconceptions"] == ["paged-slot-swapped"]
    assert all(test["outcome"] == "passed" for test in result["tests"] if test["function"] == "decode_attention")


def test_a_block_taken_one_token_late_overwrites_and_is_named_in_append():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "paged_allocate_late_last_block.py", ASSIGNMENT)
    failed = {test["function"] for test in result["tests"] if test["outcome"] != "passed"}
    assert "append" in failed and not failed & {"slot_mapping", "gather", "decode_attention"}
    assert result["misconceptions"] == ["paged-allocate-off-by-one"]


def test_free_may_give_the_blocks_back_in_any_order(tmp_path):
    """Which of a freed sequence's blocks comes back first is not graded; giving none back is."""
    source = (PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")
    line = "        self.free_blocks.extend(self.block_tables.pop(seq))\n"
    assert line in source
    reversed_path, kept_path = tmp_path / "reversed" / f"{ASSIGNMENT}.py", tmp_path / "kept" / f"{ASSIGNMENT}.py"
    for path, body in ((reversed_path, "        self.free_blocks.extend(reversed(self.block_tables.pop(seq)))\n"),
                       (kept_path, "        self.block_tables.pop(seq)  # the blocks are lost to the pool\n")):
        path.parent.mkdir()
        path.write_text(source.replace(line, body), encoding="utf-8")
    track.assert_full_marks(*track.check(reversed_path, ASSIGNMENT))
    _, result = track.check(kept_path, ASSIGNMENT)
    failed = {test["name"].rpartition("::")[2] for test in result["tests"] if test["outcome"] != "passed"}
    assert failed == {"test_paged_freed_blocks_are_reused_and_their_old_slots_never_read",
                      "test_paged_free_and_reuse_on_drawn_sizes"}


def test_stale_slots_read_in_attend_alone_fail_attend_and_the_reuse_check_only():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "paged_stale_attend_capacity.py", ASSIGNMENT)
    failed = {test["name"].rpartition("::")[2] for test in result["tests"] if test["outcome"] != "passed"}
    # (near 1000 a zero key's weight is exp(-1000) = 0: the large-score check cannot see stale zeros)
    assert failed == {"test_paged_attend_reads_only_the_sequences_own_tokens",
                      "test_paged_freed_blocks_are_reused_and_their_old_slots_never_read",
                      "test_paged_attend_on_drawn_sizes", "test_paged_free_and_reuse_on_drawn_sizes"}
    assert result["misconceptions"] == ["paged-stale-slots"]


def test_a_full_pool_must_be_refused_with_runtime_error(tmp_path):
    """Without its own check, pop() on the empty free list raises IndexError: the refusal check fails and
    says what was raised instead; everything else still passes."""
    source = (PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")
    guard = "                if not self.free_blocks:\n"
    assert guard in source
    path = tmp_path / f"{ASSIGNMENT}.py"
    path.write_text(source.replace(guard, "                if False:\n"), encoding="utf-8")
    code, result = track.check(path, ASSIGNMENT)
    refusal = next(test for test in result["tests"] if test["name"].endswith("test_paged_a_full_pool_is_refused"))
    assert code == 1 and refusal["outcome"] == "failed"
    assert "should raise RuntimeError" in refusal["message"] and "IndexError: pop from empty list" in refusal["message"]
    assert all(test["outcome"] == "passed" for test in result["tests"] if test is not refusal)


def test_an_append_that_returns_something_is_told_which_step_should_give_none(tmp_path):
    source = (PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")
    line = "            self.lengths[seq] = length + 1\n"
    assert line in source
    path = tmp_path / f"{ASSIGNMENT}.py"
    path.write_text(source.replace(line, line + "        return self.lengths[seq]\n"), encoding="utf-8")
    _, result = track.check(path, ASSIGNMENT)
    turns = next(test for test in result["tests"]
                 if test["name"].endswith("test_paged_sequences_appended_in_turns_keep_their_own_blocks"))
    assert turns["outcome"] == "failed" and turns["misconception"] == "wrong-type"
    assert "cache.value_blocks)[0] should be None; got int." in turns["message"]


def test_gather_must_leave_the_pool_unchanged(tmp_path):
    """A gather that zeroes the pool's unused slots in place gives the right tokens and still loses the
    input check on blocks."""
    source = (PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")
    line = "    num_blocks, block_size = blocks.shape[:2]\n"
    assert line in source
    path = tmp_path / f"{ASSIGNMENT}.py"
    path.write_text(source.replace(line, line + "    blocks[:] = np.where(np.isin(np.arange(num_blocks), block_table)"
                                   "[:, None, None, None], blocks, 0.0)  # tidies the caller's pool\n"),
                    encoding="utf-8")
    _, result = track.check(path, ASSIGNMENT)
    gather = next(test for test in result["tests"]
                  if test["name"].endswith("test_paged_gather_reads_the_table_in_order_and_stops_at_the_length"))
    assert gather["outcome"] == "failed" and "in place" in gather["message"]


def test_feedback_in_chinese_names_the_mistake_without_english_prose():
    result = CliRunner().invoke(root, ["check", str(mutants(ASSIGNMENT) / "mistakes" / "paged_shared_peek.py"),
                                       "--assignment", ASSIGNMENT, "--lang", "zh"])
    assert result.exit_code == 1
    assert "两个序列分到了同一个块" in result.output
    assert "Two sequences are given the same block" not in result.output


def test_a_drill_of_one_function_keeps_the_others_working(tmp_path, monkeypatch):
    from grader.practice.drill import drills

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    assert drills(ASSIGNMENT) == ("slot_mapping", "gather", "decode_attention", "append", "attend", "all")
    failing = track.drill_failures(ASSIGNMENT, "gather", tmp_path / "drill")
    assert failing == {"gather", "attend", "free"}  # attend gathers; the reuse check attends


def test_the_quiz_links_every_catalogued_mistake_of_the_exercise():
    from grader.practice.bank import questions_for_misconception

    for identifier in track.catalog_ids("paged-"):
        assert questions_for_misconception(identifier), identifier


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return track.release_alone(tmp_path_factory.mktemp("release") / "paged-student", ASSIGNMENT)


def test_released_alone_it_gives_nothing_away(release):
    track.assert_released_alone_gives_nothing_away(release, ASSIGNMENT)


def test_released_alone_it_installs_and_grades_the_stub_and_the_reference(release, tmp_path):
    track.assert_installed_release_grades_stub_and_reference(track.install_alone(release, tmp_path), ASSIGNMENT)
