"""Cases and buggy twins of the rotary-embedding exercise (``solutions/rotary_embedding.py``).

Graded: ``rope_frequencies``, ``sinusoidal_positions`` and ``apply_rotary``
(both use the frequencies, so a wrong ladder is named in all three, as its
root cause) and ``rotary_attention`` (which rotates with ``apply_rotary``).
Head widths are even and at least 4: with a single pair, adjacent and split
halves pair the same two features and that mistake would hide.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case, Sizes
from grader.grading.reference import load_reference

ASSIGNMENT = "rotary_embedding"
PUBLIC_SEED = 20240707
PUBLIC_SIZES = Sizes(B=2, H=3, T=5, S=7, d_k=6)  # D = 18; every size distinct
LLAMA3_BASE = 500000.0  # a larger base, as newer models use for longer contexts
SHIFT = 37  # how far the relative-position check moves every position
LARGE_SCORE = 1200.0  # beyond 709, where an unshifted float64 exp overflows


def draw_sizes(rng: np.random.Generator) -> Sizes:
    """Distinct sizes with an even head width of 4 to 8 (pairs of features)."""
    while True:
        B, H = int(rng.integers(2, 4)), int(rng.integers(2, 5))
        T, S, d_k = int(rng.integers(3, 8)), int(rng.integers(3, 10)), 2 * int(rng.integers(2, 5))
        values = [B, H, T, S, d_k, H * d_k]
        if len(set(values)) == len(values):
            return Sizes(B, H, T, S, d_k)


# ---- twins ------------------------------------------------------------------------------
def _ladder(exponent):
    """rope_frequencies with ``base ** exponent(i, d_k)`` for pair ``i``."""
    def make(module):
        def rope_frequencies(d_k, base=10000.0):
            return base ** exponent(np.arange(d_k // 2), d_k)
        return rope_frequencies
    return make


def _table(layout):
    """sinusoidal_positions whose columns are ``layout(sin, cos)`` of the (T, D/2) angles."""
    def make(module):
        def sinusoidal_positions(seq_len, d_model):
            angles = np.outer(np.arange(seq_len), module.rope_frequencies(d_model))  # (T, D // 2)
            return layout(np.sin(angles), np.cos(angles))
        return sinusoidal_positions
    return make


def _table_own_ladder(module):
    def sinusoidal_positions(seq_len, d_model):
        angles = np.outer(np.arange(seq_len), 10000.0 ** (-np.arange(d_model // 2) / d_model))  # i/D, not 2i/D
        table = np.empty((seq_len, d_model))
        table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
        return table
    return sinusoidal_positions


def _pairs(turn):
    """apply_rotary that turns adjacent pairs with ``turn(first, second, cos, sin)``."""
    def make(module):
        def apply_rotary(x, positions, base=10000.0):
            angles = np.outer(np.asarray(positions), module.rope_frequencies(x.shape[-1], base))  # (T, d_k // 2)
            first, second = turn(x[..., 0::2], x[..., 1::2], np.cos(angles), np.sin(angles))
            out = np.empty(x.shape)
            out[..., 0::2], out[..., 1::2] = first, second
            return out
        return apply_rotary
    return make


def _halves(spread):
    """apply_rotary in the split-halves layout: rotate_half, with the (T, d_k/2) frequencies spread to d_k by ``spread``."""
    def make(module):
        def apply_rotary(x, positions, base=10000.0):
            half = x.shape[-1] // 2
            angles = np.outer(np.asarray(positions), spread(module.rope_frequencies(x.shape[-1], base)))  # (T, d_k)
            rotated_half = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
            return x * np.cos(angles) + rotated_half * np.sin(angles)
        return apply_rotary
    return make


def _every_two(spread):
    """apply_rotary in the adjacent layout, GPT-J's rotate_every_two, with the frequencies spread to d_k by ``spread``."""
    def make(module):
        def apply_rotary(x, positions, base=10000.0):
            angles = np.outer(np.asarray(positions), spread(module.rope_frequencies(x.shape[-1], base)))  # (T, d_k)
            turned_pairs = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)  # (-x2, x1) per pair
            return x * np.cos(angles) + turned_pairs * np.sin(angles)
        return apply_rotary
    return make


def _in_place_through_views(module):
    def apply_rotary(x, positions, base=10000.0):
        x = np.array(x, dtype=float, copy=True)  # the twin's own copy: the mistake is in the order of writes
        angles = np.outer(np.asarray(positions), module.rope_frequencies(x.shape[-1], base))  # (T, d_k // 2)
        first, second = x[..., 0::2], x[..., 1::2]  # views into x
        x[..., 0::2] = first * np.cos(angles) - second * np.sin(angles)
        x[..., 1::2] = first * np.sin(angles) + second * np.cos(angles)  # reads the new first members
        return x
    return apply_rotary


def _attention(rotate_values=False, query_start=None, key_start=None):
    """rotary_attention with the queries from ``query_start(offset)`` and keys from ``key_start(offset)``."""
    def make(module):
        def rotary_attention(Q, K, V, offset=0):
            q_from = offset if query_start is None else query_start(offset)
            k_from = 0 if key_start is None else key_start(offset)
            queries = module.apply_rotary(Q, q_from + np.arange(Q.shape[-2]))
            keys = module.apply_rotary(K, k_from + np.arange(K.shape[-2]))
            values = module.apply_rotary(V, np.arange(V.shape[-2])) if rotate_values else V
            return module.attend(queries, keys, values)
        return rotary_attention
    return make


def _interleave(a, b):
    return np.stack([a, b], axis=-1).reshape(*a.shape[:-1], 2 * a.shape[-1])  # (..., n) twice -> (..., 2n)


TWINS: tuple[Twin, ...] = (
    Twin("rope-frequency-exponent", "base^(-i/d_k): the pair index over the full width", "rope_frequencies",
         _ladder(lambda i, d: -i / d)),
    Twin("rope-frequency-exponent", "base^(+2i/d_k): the minus sign lost", "rope_frequencies",
         _ladder(lambda i, d: 2 * i / d)),
    Twin("rope-frequency-exponent", "exponents from linspace(0, 1): the last pair at exactly 1/base",
         "rope_frequencies", _ladder(lambda i, d: -i / max(d // 2 - 1, 1))),
    Twin("rope-frequency-exponent", "the table's own ladder 10000^(-i/D)", "sinusoidal_positions", _table_own_ladder),
    Twin("rope-sinusoid-layout", "all sines, then all cosines", "sinusoidal_positions",
         _table(lambda sin, cos: np.concatenate([sin, cos], axis=-1))),
    Twin("rope-sinusoid-layout", "cosines in the even columns, sines in the odd", "sinusoidal_positions",
         _table(lambda sin, cos: _interleave(cos, sin))),
    Twin("rope-pairs-halves", "feature i paired with i + d_k/2 (GPT-NeoX layout)", "apply_rotary",
         _halves(lambda w: np.concatenate([w, w]))),
    Twin("rope-pairs-halves", "rotate_half with each frequency repeated for neighbours", "apply_rotary",
         _halves(lambda w: np.repeat(w, 2))),
    Twin("rope-pairs-halves", "rotate_every_two with the frequencies tiled as for halves", "apply_rotary",
         _every_two(lambda w: np.concatenate([w, w]))),
    Twin("rope-rotation-matrix", "turned by -angle (the minus sign on the other entry)", "apply_rotary",
         _pairs(lambda a, b, cos, sin: (a * cos + b * sin, b * cos - a * sin))),
    Twin("rope-rotation-matrix", "sin and cos swapped", "apply_rotary",
         _pairs(lambda a, b, cos, sin: (a * sin - b * cos, a * cos + b * sin))),
    Twin("rope-rotates-in-place", "pairs written back through views of x", "apply_rotary", _in_place_through_views),
    Twin("rope-rotates-values", "the values rotated like the keys", "rotary_attention", _attention(rotate_values=True)),
    Twin("rope-offset-ignored", "queries rotated from position 0", "rotary_attention",
         _attention(query_start=lambda offset: 0)),
    Twin("rope-offset-ignored", "keys shifted by the offset too", "rotary_attention",
         _attention(key_start=lambda offset: offset)),
)

CALL_TEXT = {
    "rope_frequencies": "rope_frequencies(d_k{keywords})",
    "sinusoidal_positions": "sinusoidal_positions(seq_len, d_model)",
    "apply_rotary": "apply_rotary(x, positions{keywords})",
    "rotary_attention": "rotary_attention(Q, K, V{keywords})",
}
LEGENDS = {
    "rope_frequencies": "(d_k // 2,)",
    "sinusoidal_positions": "(T, D)",
    "apply_rotary": "x.shape",
    "rotary_attention": "(B, H, T, d_k)",
}
ARGUMENT_NAMES = {
    "rope_frequencies": ("d_k",), "sinusoidal_positions": ("seq_len", "d_model"),
    "apply_rotary": ("x", "positions"), "rotary_attention": ("Q", "K", "V"),
}


# ---- cases --------------------------------------------------------------------------------
def _case(name: str, prefix: str, function: str, args: tuple, kwargs: dict | None = None) -> Case:
    keywords = "".join(f", {key}={value:g}" for key, value in (kwargs or {}).items())  # e.g. ", offset=7"
    case = Case(id=f"{prefix}{name}", function=function, args=args, kwargs=kwargs or {},
                call_text=CALL_TEXT[function].format(keywords=keywords), legend=LEGENDS[function], argument_names=ARGUMENT_NAMES[function],
                mutation_id="rope-rotates-in-place" if function in ("apply_rotary", "rotary_attention") else None)
    return with_expectations(case, ASSIGNMENT, TWINS)


def _scattered_positions(rng: np.random.Generator, T: int) -> np.ndarray:
    """T distinct positions out of order, none of them 0 (where every rotation is the identity)."""
    return (rng.permutation(3 * T)[:T] + 1).astype(np.int64)


def _aligned_queries(rng: np.random.Generator, keys: np.ndarray, offset: int, T: int) -> np.ndarray:
    """Queries that, rotated at offset .. offset + T - 1, point along one rotated key each, scaled to a score
    near LARGE_SCORE: large scores with one clear winner per row, so no near tie makes float32 rounding count."""
    rotate = load_reference(ASSIGNMENT).apply_rotary
    S, d_k = keys.shape[2], keys.shape[3]
    turned_keys = rotate(keys, np.arange(S))  # (B, H, S, d_k)
    chosen = turned_keys[:, :, rng.integers(0, S, T)]  # (B, H, T, d_k): the key each query will pick
    lengths = np.sum(chosen * chosen, axis=-1, keepdims=True)  # (B, H, T, 1)
    targets = chosen * (LARGE_SCORE * np.sqrt(d_k) / lengths)  # score with its key: LARGE_SCORE
    return rotate(targets, -(offset + np.arange(T)))  # turned back by its own angle


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the rotary-embedding exercise for these sizes, keyed by name."""
    B, H, T, S, d_k, D = sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.D
    total = T + S  # every token so far: S cached, then the T newest
    Q, K, V = (floats(rng, B, H, total, d_k) for _ in range(3))
    pair = floats(rng, 2, 1, T, d_k)  # row 0 queries, row 1 keys, at the same positions
    relative_positions = _scattered_positions(rng, T)
    specs = [
        ("frequencies/head", "rope_frequencies", (d_k,), None),
        ("frequencies/model", "rope_frequencies", (D,), None),
        ("frequencies/base", "rope_frequencies", (d_k,), {"base": LLAMA3_BASE}),
        ("sinusoid/table", "sinusoidal_positions", (total, D), None),
        ("sinusoid/long", "sinusoidal_positions", (int(rng.integers(60, 90)), 2 * d_k), None),
        ("rotary/scattered", "apply_rotary", (floats(rng, B, H, T, d_k), _scattered_positions(rng, T)), None),
        ("rotary/far", "apply_rotary",
         (floats(rng, B, H, T, d_k), np.arange(T, dtype=np.int64) * 90 + int(rng.integers(200, 400))), None),
        ("rotary/base-no-batch", "apply_rotary", (floats(rng, T, d_k), np.arange(1, T + 1, dtype=np.int64)),
         {"base": 100.0}),
        ("relative/near", "apply_rotary", (pair, relative_positions), None),
        ("relative/shifted", "apply_rotary", (pair, relative_positions + SHIFT), None),
        ("attention/prefill", "rotary_attention", (Q, K, V), None),
        ("attention/decode", "rotary_attention", (Q[:, :, S:], K, V), {"offset": S}),
        ("attention/one-step", "rotary_attention", (Q[:, :, -1:], K, V), {"offset": total - 1}),
        ("attention/middle", "rotary_attention", (Q[:, :, 1:T], K, V), {"offset": 1}),
        ("attention/large-logits", "rotary_attention", (_aligned_queries(rng, K, S, T), K, V), {"offset": S}),
    ]
    return {name: _case(name, prefix, function, args, kwargs) for name, function, args, kwargs in specs}


CASES = CaseSets(build_cases, PUBLIC_SEED, public_sizes=PUBLIC_SIZES, draw=draw_sizes)
public_cases, hidden_cases = CASES.public, CASES.hidden
