"""Cases and buggy twins of the decoding-step exercise (``solutions/decoding_step.py``).

Graded: ``softmax`` (used by ``top_p_filter`` and ``next_token_distribution``,
so a wrong axis is named in all three, as its root cause),
``apply_temperature``, ``top_k_filter``, ``top_p_filter``,
``next_token_distribution`` (which chains them) and ``sample``.

Rows are sequences (B) and columns tokens (V), with B != V so a softmax over
the wrong axis cannot hide; rows of logits near +-1000 put an overflow on the
path of every softmax. ``sample`` takes its uniform draws as an array (a
Generator cannot cross into the worker), and one case puts them exactly on the
cumulative sums, where ``>`` and ``>=`` pick different tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case, ErrorRule, Raised

ASSIGNMENT = "decoding_step"
PUBLIC_SEED = 20240808


@dataclass(frozen=True)
class Sizes:
    B: int  # sequences decoded together
    V: int  # vocabulary size


PUBLIC_SIZES = Sizes(B=3, V=11)


def draw_sizes(rng: np.random.Generator) -> Sizes:
    """A batch of 2 to 5 rows over a vocabulary of 8 to 19 tokens (never a square)."""
    return Sizes(B=int(rng.integers(2, 6)), V=int(rng.integers(8, 20)))


# ---- twins ------------------------------------------------------------------------------
def _softmax(axis_max, axis_sum):
    def make(module):
        def softmax(logits):
            weights = np.exp(logits - logits.max(axis=axis_max, keepdims=True))
            return weights / weights.sum(axis=axis_sum, keepdims=True)
        return softmax
    return make


def _unshifted(module):
    def softmax(logits):
        weights = np.exp(logits)  # overflows to inf past about 709
        return weights / weights.sum(axis=-1, keepdims=True)
    return softmax


def _unshifted_log_space(module):
    def softmax(logits):
        return np.exp(logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True)))
    return softmax


def _temperature(scale):
    """apply_temperature with greedy kept and ``scale(logits, t)`` for t > 0."""
    def make(module):
        reference = module.apply_temperature

        def apply_temperature(logits, temperature):
            return reference(logits, 0) if temperature == 0 else scale(logits, temperature)
        return apply_temperature
    return make


def _divides_by_zero(module):
    def apply_temperature(logits, temperature):
        with np.errstate(all="ignore"):
            return np.asarray(logits, dtype=float) / np.float64(temperature)  # 0 -> +-inf and nan
    return apply_temperature


def _temperature_on_probabilities(module):
    def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
        if temperature == 0:
            return module.softmax(module.apply_temperature(logits, 0))
        filtered = logits
        if top_k is not None:
            filtered = module.top_k_filter(filtered, top_k)
        if top_p is not None:
            filtered = module.top_p_filter(filtered, top_p)
        probabilities = module.softmax(filtered) / temperature  # the renormalisation cancels it
        return probabilities / probabilities.sum(axis=-1, keepdims=True)
    return next_token_distribution


def _top_k_fill(value):
    def make(module):
        def top_k_filter(logits, k):
            if k >= logits.shape[-1]:
                return logits.copy()
            kth_largest = np.sort(logits, axis=-1)[:, -k][:, None]  # (B, 1)
            return np.where(logits >= kth_largest, logits, value)
        return top_k_filter
    return make


def _nucleus(keep_rule, fill=-np.inf, ranked=True):
    """top_p_filter keeping ``keep_rule(before, cumulative, p)`` in ranked (or vocabulary) order."""
    def make(module):
        def top_p_filter(logits, p):
            probabilities = module.softmax(logits)  # (B, V)
            order = (np.argsort(-probabilities, axis=-1, kind="stable") if ranked
                     else np.broadcast_to(np.arange(logits.shape[-1]), logits.shape))
            sorted_probabilities = np.take_along_axis(probabilities, order, axis=-1)
            cumulative = np.cumsum(sorted_probabilities, axis=-1)
            keep_sorted = keep_rule(cumulative - sorted_probabilities, cumulative, p)
            keep = np.zeros(keep_sorted.shape, dtype=bool)
            np.put_along_axis(keep, np.ascontiguousarray(order), keep_sorted, axis=-1)
            return np.where(keep, logits, fill)
        return top_p_filter
    return make


def _drops_crossing(before, cumulative, p):
    keep = cumulative <= p
    keep[:, 0] = True  # at least one token
    return keep


def _temperature_after_filters(module):
    def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
        filtered = logits
        if top_k is not None:
            filtered = module.top_k_filter(filtered, top_k)
        if top_p is not None:
            filtered = module.top_p_filter(filtered, top_p)  # the nucleus of the untempered distribution
        return module.softmax(module.apply_temperature(filtered, temperature))
    return next_token_distribution


def _not_renormalised(module):
    def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
        tempered = module.apply_temperature(logits, temperature)
        filtered = tempered
        if top_k is not None:
            filtered = module.top_k_filter(filtered, top_k)
        if top_p is not None:
            filtered = module.top_p_filter(filtered, top_p)
        return module.softmax(tempered) * np.isfinite(filtered)  # the kept share no longer sums to 1
    return next_token_distribution


def _sample(compare):
    def make(module):
        def sample(probs, uniforms):
            cumulative = np.cumsum(probs, axis=-1)  # (B, V)
            return compare(cumulative, np.asarray(uniforms)[:, None]).argmax(axis=-1).astype(np.int64)
        return sample
    return make


TWINS: tuple[Twin, ...] = (
    Twin("decode-softmax-wrong-axis", "softmax over the batch axis", "softmax", _softmax(0, 0)),
    Twin("decode-softmax-wrong-axis", "row maxima, but sums down the columns", "softmax", _softmax(-1, 0)),
    Twin("decode-softmax-unstable", "exp of the logits as they are", "softmax", _unshifted),
    Twin("decode-softmax-unstable", "log-sum-exp without the shift", "softmax", _unshifted_log_space),
    Twin("decode-temperature-misapplied", "logits multiplied by the temperature", "apply_temperature",
         _temperature(lambda logits, t: logits * t)),
    Twin("decode-temperature-misapplied", "logits minus the temperature", "apply_temperature",
         _temperature(lambda logits, t: logits - t)),
    Twin("decode-temperature-misapplied", "the probabilities divided by the temperature, then renormalised",
         "next_token_distribution", _temperature_on_probabilities),
    Twin("decode-temperature-misapplied", "the filters on the raw logits, the temperature last",
         "next_token_distribution", _temperature_after_filters),
    Twin("decode-greedy-divides-by-zero", "temperature 0 divided like any other", "apply_temperature",
         _divides_by_zero),
    Twin("decode-filter-zero", "top-k fills 0 instead of -inf", "top_k_filter", _top_k_fill(0.0)),
    Twin("decode-filter-zero", "top-p fills 0 instead of -inf", "top_p_filter",
         _nucleus(lambda before, cumulative, p: before < p, fill=0.0)),
    Twin("decode-top-p-drops-crossing", "the token that crosses p dropped", "top_p_filter", _nucleus(_drops_crossing)),
    Twin("decode-top-p-unsorted", "the cumulative sum in vocabulary order", "top_p_filter",
         _nucleus(lambda before, cumulative, p: before < p, ranked=False)),
    Twin("decode-not-renormalised", "filtered tokens zeroed in the full softmax", "next_token_distribution",
         _not_renormalised),
    Twin("decode-sample-boundary", "the first cumulative sum >= u", "sample",
         _sample(lambda cumulative, u: cumulative >= u)),
)

CALL_TEXT = {
    "softmax": "softmax(logits)",
    "apply_temperature": "apply_temperature(logits, temperature)",
    "top_k_filter": "top_k_filter(logits, k)",
    "top_p_filter": "top_p_filter(logits, p)",
    "next_token_distribution": "next_token_distribution(logits, temperature, top_k, top_p)",
    "sample": "sample(probs, uniforms)",
}
LEGENDS = {name: "(B, V)" for name in CALL_TEXT} | {"sample": "(B,)"}
ARGUMENT_NAMES = {
    "softmax": ("logits",), "apply_temperature": ("logits", "temperature"), "top_k_filter": ("logits", "k"),
    "top_p_filter": ("logits", "p"), "next_token_distribution": ("logits",), "sample": ("probs", "uniforms"),
}
# ``1.0 / temperature`` in plain Python raises instead of giving inf.
DIVISION_BY_ZERO = (ErrorRule("decode-greedy-divides-by-zero", message_any=("division by zero",)),)


# ---- cases --------------------------------------------------------------------------------
def _case(name: str, prefix: str, function: str, args: tuple, kwargs: dict | None = None) -> Case:
    case = Case(id=f"{prefix}{name}", function=function, args=args, kwargs=kwargs or {},
                call_text=CALL_TEXT[function], legend=LEGENDS[function], argument_names=ARGUMENT_NAMES[function],
                error_rules=DIVISION_BY_ZERO if function in ("apply_temperature", "next_token_distribution") else ())
    return with_expectations(case, ASSIGNMENT, TWINS)


def _large(rng: np.random.Generator, B: int, V: int) -> np.ndarray:
    """Logits near +-1000: exp overflows unless each row's maximum is subtracted first."""
    return np.where(rng.random((B, V)) < 0.5, 1000.0, -1000.0) + floats(rng, B, V, scale=2.0)


def _tied(rng: np.random.Generator, B: int, V: int) -> tuple[np.ndarray, int]:
    """Logits whose 3rd largest value appears twice in every row (and whose largest twice in row 0)."""
    logits = floats(rng, B, V)
    for row in logits:
        order = np.argsort(-row)
        row[order[3]] = row[order[2]]  # the k-th (k = 3) value, tied
    logits[0, np.argsort(-logits[0])[1]] = logits[0].max()  # a tie for the first place: greedy takes the first
    return logits, 3


def _boundaries(B: int, V: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities in exact binary fractions, with uniforms exactly on a cumulative sum or at 0."""
    probs = np.zeros((B, V))
    uniforms = np.zeros(B)
    for b in range(B):
        start = (2 * b + 1) % (V - 3)  # zeros before it: u = 0 must skip them
        probs[b, start:start + 3] = (0.25, 0.5, 0.25)
        uniforms[b] = (0.0, 0.25, 0.75)[b % 3]
    return probs, uniforms


def _refused(name: str, prefix: str, function: str, args: tuple) -> Case:
    """A setting out of its range: the reference raises ValueError (checked by its type; no twin applies)."""
    return Case(id=f"{prefix}{name}", function=function, args=args, call_text=CALL_TEXT[function],
                legend=LEGENDS[function], argument_names=ARGUMENT_NAMES[function],
                expected=Raised("ValueError", ""))


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the decoding-step exercise for these sizes, keyed by name."""
    B, V = sizes.B, sizes.V
    logits, large = floats(rng, B, V, scale=2.0), _large(rng, B, V)
    tied, k_tied = _tied(rng, B, V)
    after_top_k = np.where(logits >= np.sort(logits, axis=-1)[:, -5][:, None], logits, -np.inf)  # 5 finite per row
    probs = np.exp(floats(rng, B, V))
    probs /= probs.sum(axis=-1, keepdims=True)
    boundary_probs, boundary_uniforms = _boundaries(B, V)
    specs = [
        ("softmax/small", "softmax", (floats(rng, B, V),), None),
        ("softmax/large-logits", "softmax", (large,), None),
        ("softmax/filtered", "softmax", (after_top_k,), None),
        ("temperature/sharpen", "apply_temperature", (logits, 0.5), None),
        ("temperature/flatten", "apply_temperature", (floats(rng, B, V), 2.5), None),
        ("temperature/greedy", "apply_temperature", (tied, 0.0), None),
        ("temperature/large-logits", "apply_temperature", (large, 0.7), None),
        ("top-k/few", "top_k_filter", (logits, 3), None),
        ("top-k/ties", "top_k_filter", (tied, k_tied), None),
        ("top-k/one", "top_k_filter", (floats(rng, B, V), 1), None),
        ("top-k/all", "top_k_filter", (logits, V + 2), None),
        ("top-p/half", "top_p_filter", (logits, 0.55), None),
        ("top-p/most", "top_p_filter", (floats(rng, B, V, scale=1.5), 0.9), None),
        ("top-p/tiny", "top_p_filter", (floats(rng, B, V), 0.01), None),
        ("top-p/after-top-k", "top_p_filter", (after_top_k, 0.7), None),
        ("top-p/large-logits", "top_p_filter", (large, 0.8), None),
        ("distribution/plain", "next_token_distribution", (logits,), {"temperature": 0.8}),
        ("distribution/top-k", "next_token_distribution", (floats(rng, B, V, scale=2.0),),
         {"temperature": 1.3, "top_k": 4}),
        ("distribution/top-p", "next_token_distribution", (logits,), {"temperature": 0.7, "top_p": 0.75}),
        ("distribution/both", "next_token_distribution", (floats(rng, B, V, scale=2.0),),
         {"temperature": 1.1, "top_k": 5, "top_p": 0.6}),
        ("distribution/greedy", "next_token_distribution", (tied,), {"temperature": 0.0, "top_k": 4, "top_p": 0.5}),
        ("distribution/large-logits", "next_token_distribution", (large,), {"temperature": 0.5, "top_p": 0.9}),
        ("sample/drawn", "sample", (probs, rng.random(B)), None),
        ("sample/boundaries", "sample", (boundary_probs, boundary_uniforms), None),
    ]
    refused = [
        ("refused/negative-temperature", "apply_temperature", (logits, -0.5)),
        ("refused/k-zero", "top_k_filter", (logits, 0)),
        ("refused/p-zero", "top_p_filter", (logits, 0.0)),
        ("refused/p-above-one", "top_p_filter", (logits, 1.5)),
    ]
    return ({name: _case(name, prefix, function, args, kwargs) for name, function, args, kwargs in specs}
            | {name: _refused(name, prefix, function, args) for name, function, args in refused})


CASES = CaseSets(build_cases, PUBLIC_SEED, public_sizes=PUBLIC_SIZES, draw=draw_sizes)
public_cases, hidden_cases = CASES.public, CASES.hidden
