"""Cases and buggy twins of the paged KV-cache exercise (``solutions/paged_kv_cache.py``).

Graded: ``slot_mapping``, ``gather`` and ``decode_attention`` (pure functions,
checked alone), then ``PagedKVCache.append``, ``free`` and ``attend``, checked
by several calls on one cache in the worker (``Case.calls``): sequences are
appended in turns, so their blocks interleave in the pool, and the tables
they get are in falling order (the free list is a stack), never the pool's.

Every sequence ends in a partly filled block but one, which ends exactly on a
block's last slot (where a block taken one token early or late shows), and a
freed sequence's blocks are reused, so the slots after the last token hold
another sequence's keys: reading them changes the attention.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case, Raised

ASSIGNMENT = "paged_kv_cache"
PUBLIC_SEED = 20250611
CLASS = "PagedKVCache"


@dataclass(frozen=True)
class Sizes:
    N: int  # blocks in the pool
    b: int  # token slots per block
    H: int  # heads
    d_k: int  # width of one head


PUBLIC_SIZES = Sizes(N=9, b=3, H=2, d_k=4)


def draw_sizes(rng: np.random.Generator) -> Sizes:
    """Blocks of 2 to 4 slots, 2 or 3 heads of width 2 to 6, 8 to 11 blocks; no two sizes equal."""
    while True:
        sizes = Sizes(N=int(rng.integers(8, 12)), b=int(rng.integers(2, 5)), H=int(rng.integers(2, 4)),
                      d_k=int(rng.integers(2, 7)))
        if len({sizes.N, sizes.b, sizes.H, sizes.d_k}) == 4:
            return sizes


# ---- twins ------------------------------------------------------------------------------
def _slots(block_of, offset_of):
    """slot_mapping with the physical block ``block_of(table, p, b)`` and the offset ``offset_of(p, b)``."""
    def make(module):
        def slot_mapping(block_table, positions, block_size):
            table, positions = np.asarray(block_table, dtype=np.int64), np.asarray(positions, dtype=np.int64)
            return block_of(table, positions, block_size) * block_size + offset_of(positions, block_size)
        return slot_mapping
    return make


def _gather(order, *, whole_blocks=False):
    """gather taking the blocks in ``order(table)``, optionally every slot of the last one."""
    def make(module):
        def gather(blocks, block_table, length):
            picked = blocks[order(np.asarray(block_table, dtype=np.int64))]  # (number of blocks, b, H, d_k)
            tokens = picked.reshape(-1, *blocks.shape[2:])  # (number of blocks * b, H, d_k)
            return tokens if whole_blocks else tokens[:length]
        return gather
    return make


def _append(needs_block, take=lambda self, table: self.free_blocks.pop()):
    """append that takes a block when ``needs_block(length, blocks, b)``, by ``take(self, table)``."""
    def make(module):
        def append(self, seq, keys, values):
            table = self.block_tables.setdefault(seq, [])
            for key, value in zip(keys, values):
                length = self.lengths.get(seq, 0)
                if needs_block(length, len(table), self.block_size):
                    if not self.free_blocks:
                        raise RuntimeError("no free block")
                    table.append(take(self, table))
                slot = int(module.slot_mapping(table, [length], self.block_size)[0])
                self.key_blocks[slot // self.block_size, slot % self.block_size] = key
                self.value_blocks[slot // self.block_size, slot % self.block_size] = value
                self.lengths[seq] = length + 1
        return append
    return make


def _append_overwrites_last_block(module):
    """The first block taken with the sequence, then a new one only once the length passes the slots."""
    def append(self, seq, keys, values):
        table = self.block_tables.setdefault(seq, [])
        for key, value in zip(keys, values):
            length = self.lengths.get(seq, 0)
            if not table or length > len(table) * self.block_size:  # one token late
                table.append(self.free_blocks.pop())
            self.key_blocks[table[-1], length % self.block_size] = key  # token b lands on token 0
            self.value_blocks[table[-1], length % self.block_size] = value
            self.lengths[seq] = length + 1
    return append


def _attend_whole_blocks(module):
    def attend(self, seq, query):
        table = self.block_tables[seq]
        slots = len(table) * self.block_size  # every slot of the last block, used or not
        keys = module.gather(self.key_blocks, table, slots)
        values = module.gather(self.value_blocks, table, slots)
        return module.decode_attention(query, keys, values)
    return attend


def _unshifted(module):
    def decode_attention(query, keys, values):
        scores = np.einsum("hd,lhd->hl", query, keys) / np.sqrt(query.shape[-1])  # (H, L)
        weights = np.exp(scores)  # overflows to inf past about 709
        return np.einsum("hl,lhd->hd", weights / weights.sum(axis=-1, keepdims=True), values)
    return decode_attention


TWINS: tuple[Twin, ...] = (
    Twin("paged-slot-swapped", "block index and offset swapped", "slot_mapping",
         _slots(lambda table, p, b: table[p % b], lambda p, b: p // b)),
    Twin("paged-pool-order", "the position's own block number used, the table skipped", "slot_mapping",
         _slots(lambda table, p, b: p // b, lambda p, b: p % b)),
    Twin("paged-pool-order", "the blocks gathered in pool order", "gather", _gather(np.sort)),
    Twin("paged-stale-slots", "the last block read in full", "gather", _gather(lambda table: table, whole_blocks=True)),
    Twin("paged-stale-slots", "every slot of the last block attended", f"{CLASS}.attend", _attend_whole_blocks),
    Twin("paged-allocate-off-by-one", "a new block taken while the last still has a free slot",
         f"{CLASS}.append", _append(lambda length, blocks, b: length + 1 >= blocks * b)),
    Twin("paged-allocate-off-by-one", "a new block taken one token late", f"{CLASS}.append",
         _append_overwrites_last_block),
    Twin("paged-shared-block", "the free block read but never taken off the list", f"{CLASS}.append",
         _append(lambda length, blocks, b: length == blocks * b, take=lambda self, table: self.free_blocks[-1])),
    Twin("paged-shared-block", "blocks numbered from 0 in every sequence", f"{CLASS}.append",
         _append(lambda length, blocks, b: length == blocks * b, take=lambda self, table: len(table))),
    Twin("paged-softmax-unstable", "exp of the scores as they are", "decode_attention", _unshifted),
)

CALL_TEXT = {
    "slot_mapping": "slot_mapping(block_table, positions, block_size)",
    "gather": "gather(blocks, block_table, length)",
    "decode_attention": "decode_attention(query, keys, values)",
}
LEGENDS = {"slot_mapping": "(n,)", "gather": "(L, H, d_k)", "decode_attention": "(H, d_k)"}
ARGUMENT_NAMES = {
    "slot_mapping": ("block_table", "positions", "block_size"), "gather": ("blocks", "block_table", "length"),
    "decode_attention": ("query", "keys", "values"),
}


# ---- cases --------------------------------------------------------------------------------
def _expecting(case: Case) -> Case:
    """``case`` with its expected value and twins, less the twins that end in an IndexError: a position past
    the table is where a swapped slot, a late block and a short gather all end, so it names none of them."""
    case = with_expectations(case, ASSIGNMENT, TWINS)
    builder = case.twin_builder

    def differing(case: Case, only=None) -> list:
        return [twin for twin in builder(case, only=only)
                if not (isinstance(twin[2], Raised) and twin[2].type == "IndexError")]
    return replace(case, twin_builder=differing)


def _case(prefix: str, name: str, function: str, args: tuple) -> Case:
    case = Case(id=f"{prefix}{name}", function=function, args=args, call_text=CALL_TEXT[function],
                legend=LEGENDS[function], argument_names=ARGUMENT_NAMES[function])
    return _expecting(case)


def _calls_case(prefix: str, name: str, sizes: Sizes, function: str, steps: tuple, *, blocks: int | None = None,
                expected=None) -> Case:
    """Calls on one ``PagedKVCache(N, b, H, d_k)``: ``steps`` are (method or attribute, args) pairs."""
    calls = tuple((method, args, {} if args is not None else None) for method, args in steps)
    legends = tuple({"append": None, "free": None, "block_table": "(number of blocks,)", "attend": "(H, d_k)"}
                    .get(method, "(N, b, H, d_k)") for method, _ in steps)
    case = Case(id=f"{prefix}{name}", function=function, args=(), class_name=CLASS,
                init=(sizes.N if blocks is None else blocks, sizes.b, sizes.H, sizes.d_k), calls=calls,
                call_text="(" + ", ".join(_step_text(method, args) for method, args in steps) + ")", legend=legends,
                argument_names=("seq", "keys", "values") if function == "append" else ("seq", "query"))
    if expected is not None:
        return replace(case, expected=expected)  # a refusal: no twin is asked
    return _expecting(case)


def _step_text(method: str, args) -> str:
    if args is None:
        return f"cache.{method}"
    if method == "append":
        return f"cache.append({args[0]!r}, <{tuple(args[1].shape)}>, <{tuple(args[2].shape)}>)"  # keys, values
    return f"cache.{method}({args[0]!r}{', query' if method == 'attend' else ''})"


def _tokens(rng: np.random.Generator, sizes: Sizes, count: int, *, scale: float = 1.0):
    return floats(rng, count, sizes.H, sizes.d_k, scale=scale), floats(rng, count, sizes.H, sizes.d_k)


def _in_turns(rng: np.random.Generator, sizes: Sizes) -> tuple:
    """Sequence "a" (2b + 1 tokens) and "b" (b + 1) appended in turns, in chunks that cross block ends."""
    b = sizes.b
    (ka, va), (kb, vb) = _tokens(rng, sizes, 2 * b + 1), _tokens(rng, sizes, b + 1)
    cuts_a, cuts_b = (0, b + 1, b + 2, 2 * b + 1), (0, 2, b + 1)
    return (("append", ("a", ka[cuts_a[0]:cuts_a[1]], va[cuts_a[0]:cuts_a[1]])),
            ("append", ("b", kb[cuts_b[0]:cuts_b[1]], vb[cuts_b[0]:cuts_b[1]])),
            ("append", ("a", ka[cuts_a[1]:cuts_a[2]], va[cuts_a[1]:cuts_a[2]])),
            ("append", ("b", kb[cuts_b[1]:cuts_b[2]], vb[cuts_b[1]:cuts_b[2]])),
            ("append", ("a", ka[cuts_a[2]:cuts_a[3]], va[cuts_a[2]:cuts_a[3]])))


def _large_query(rng: np.random.Generator, keys: np.ndarray) -> np.ndarray:
    """A query whose largest scaled score is exactly 1000 in every head (exp overflows unless shifted)."""
    H, d_k = keys.shape[1:]
    query = floats(rng, H, d_k)
    scores = np.einsum("hd,lhd->hl", query, keys) / np.sqrt(d_k)  # (H, L)
    return query * (1000.0 / scores.max(axis=-1, where=scores > 0, initial=1e-3))[:, None]


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the paged KV-cache exercise for these sizes, keyed by name."""
    N, b, H, d_k = sizes.N, sizes.b, sizes.H, sizes.d_k
    table = rng.permutation(N)[:b + 1]  # (b + 1,), never in the pool's order
    table = table if not np.all(np.diff(table) > 0) else table[::-1].copy()
    length = 2 * b + 1  # three blocks, the last holding one token
    short_table = table[:3]
    pool_k = floats(rng, N, b, H, d_k)
    keys, values = floats(rng, length, H, d_k), floats(rng, length, H, d_k)
    turns = _in_turns(rng, sizes)
    (ka, va), (kc, vc) = _tokens(rng, sizes, 2 * b), _tokens(rng, sizes, b + 2)
    large_keys, large_values = _tokens(rng, sizes, length)
    query, query_b = floats(rng, H, d_k), floats(rng, H, d_k)
    one_by_one = tuple(("append", ("a", ka[step:step + 1], va[step:step + 1])) for step in range(b - 1, 2 * b))
    # the pool holds exactly a's and b's blocks: c can only get blocks a gave back (in whatever order free
    # puts them, which is not compared), and its last block keeps a's keys past its length
    reuse = turns + (("free", ("a",)), ("append", ("c", kc[:b + 1], vc[:b + 1])),
                     ("attend", ("c", query)), ("attend", ("b", query_b)))
    cases = {
        "slots/table": _case(prefix, "slots/table", "slot_mapping", (table, np.arange(len(table) * b), b)),
        "slots/shuffled": _case(prefix, "slots/shuffled", "slot_mapping",
                                (table, rng.permutation(len(table) * b)[:b + 2], b)),
        "slots/one-block": _case(prefix, "slots/one-block", "slot_mapping", (table[:1], np.arange(b)[::-1].copy(), b)),
        "gather/partial": _case(prefix, "gather/partial", "gather", (pool_k, short_table, length)),
        "gather/whole-blocks": _case(prefix, "gather/whole-blocks", "gather", (pool_k, short_table[:2], 2 * b)),
        "gather/one-token": _case(prefix, "gather/one-token", "gather", (pool_k, short_table[:1], 1)),
        "attention/small": _case(prefix, "attention/small", "decode_attention", (query, keys, values)),
        "attention/one-key": _case(prefix, "attention/one-key", "decode_attention",
                                   (query_b, keys[:1], values[:1])),
        "attention/large-scores": _case(prefix, "attention/large-scores", "decode_attention",
                                        (_large_query(rng, large_keys), large_keys, large_values)),
        "cache/in-turns": _calls_case(prefix, "cache/in-turns", sizes, "append", turns + (
            ("block_table", ("a",)), ("block_table", ("b",)), ("key_blocks", None), ("value_blocks", None))),
        "cache/exact-fill": _calls_case(prefix, "cache/exact-fill", sizes, "append", (
            ("append", ("a", ka, va)), ("block_table", ("a",)), ("append", ("a", kc[:1], vc[:1])),
            ("block_table", ("a",)), ("key_blocks", None))),
        "cache/one-by-one": _calls_case(prefix, "cache/one-by-one", sizes, "append", (
            ("append", ("a", ka[:b - 1], va[:b - 1])),) + one_by_one + (("block_table", ("a",)),)),
        "cache/reuse": _calls_case(prefix, "cache/reuse", sizes, "free", reuse, blocks=5),
        "attend/in-turns": _calls_case(prefix, "attend/in-turns", sizes, "attend", turns + (
            ("attend", ("a", query)), ("attend", ("b", query_b)))),
        "attend/large-scores": _calls_case(prefix, "attend/large-scores", sizes, "attend", (
            ("append", ("a", large_keys[:b + 1], large_values[:b + 1])), ("append", ("b", kc, vc)),
            ("append", ("a", large_keys[b + 1:], large_values[b + 1:])),
            ("attend", ("a", _large_query(rng, large_keys))))),
        "refused/pool-full": _calls_case(prefix, "refused/pool-full", sizes, "append", (
            ("append", ("a", keys, values)),), blocks=2, expected=Raised("RuntimeError", "")),
    }
    return cases


CASES = CaseSets(build_cases, PUBLIC_SEED, public_sizes=PUBLIC_SIZES, draw=draw_sizes)
public_cases, hidden_cases = CASES.public, CASES.hidden
