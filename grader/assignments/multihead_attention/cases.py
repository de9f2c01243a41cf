"""Cases and buggy twins of the core exercise (``solutions/multihead_attention.py``).

Graded: ``softmax``, ``scaled_dot_product_attention`` and the methods
``split_heads``, ``combine_heads`` and ``forward`` of ``MultiHeadAttention``
(plus its constructor, checked directly by the suite). A twin replaces one of
them in a private copy of the reference; the reference's other functions call
through names, so a mistake in ``softmax`` or ``split_heads`` shows in
``forward``'s output too, and is named there as the root cause.

Sizes are distinct and non-square (B=2, H=3, T=5, S=7, d_k=4 in public) and
inputs are small random floats, so a swapped axis or a missing scale cannot
hide behind a coincidence of sizes.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case, ErrorRule, Sizes, link_companions, stability_logits
from grader.grading.reference import load_reference

ASSIGNMENT = "multihead_attention"
PUBLIC_SEED = 20240613
CLASS = "MultiHeadAttention"
METHODS = ("split_heads", "combine_heads", "forward")


# ---- softmax twins ----------------------------------------------------------------------
def _normalized(x, axis):
    """A stable softmax over ``axis``: what a mistaken axis computes."""
    exponentials = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return exponentials / np.sum(exponentials, axis=axis, keepdims=True)


def _unstable(module):
    def softmax(x):
        exponentials = np.exp(x)
        return exponentials / exponentials.sum(axis=-1, keepdims=True)
    return softmax


def _global_max(module):
    def softmax(x):
        exponentials = np.exp(x - np.max(x))
        return exponentials / exponentials.sum(axis=-1, keepdims=True)
    return softmax


def _over_axis(axis):
    def make(module):
        def softmax(x):
            if x.ndim == 1 and axis not in (-1, 0, None):
                return _normalized(x, -1)
            return _normalized(x, axis)
        return softmax
    return make


def _whole_array(*, shifted: bool):
    def make(module):
        def softmax(x):
            exponentials = np.exp(x - np.max(x)) if shifted else np.exp(x)
            return exponentials / exponentials.sum()
        return softmax
    return make


def _no_keepdims(*, on_max: bool, on_sum: bool):
    def make(module):
        def softmax(x):
            exponentials = np.exp(x - np.max(x, axis=-1, keepdims=not on_max))
            return exponentials / exponentials.sum(axis=-1, keepdims=not on_sum)
        return softmax
    return make


# ---- attention twins (they call the module's softmax, so softmax twins compose) ---------
def _attention(*, scale=None, keys=None, product=None, returns_scores=False, axis=None, after_softmax=None):
    """An attention whose scale, key transpose, value product or returned weights are mistaken."""
    def make(module):
        def scaled_dot_product_attention(Q, K, V):
            d_k = Q.shape[-1]
            raw = Q @ (np.swapaxes(K, -1, -2) if keys is None else keys(K))  # (B, H, T, S)
            if after_softmax == "weights":
                weights = module.softmax(raw) / np.sqrt(d_k)
                return weights @ V, weights
            if after_softmax == "output":
                weights = module.softmax(raw)
                return weights @ V / np.sqrt(d_k), weights
            scores = raw / np.sqrt(d_k) if scale is None else scale(raw, Q, K)
            weights = module.softmax(scores) if axis is None else _normalized(scores, axis)
            out = weights @ V if product is None else product(weights, K, V)
            if returns_scores == "scaled":
                return out, scores
            if returns_scores == "raw":
                return out, raw
            return out, weights
        return scaled_dot_product_attention
    return make


def _causal(scores, Q, K):
    """The scaled scores with every key after its query masked to -inf: a decoder's causal mask, always on."""
    later = np.triu(np.ones(scores.shape[-2:], dtype=bool), k=1)  # (T, S): key s > query t
    return np.where(later, -np.inf, scores / np.sqrt(Q.shape[-1]))


# ---- split / combine twins ----------------------------------------------------------------
def _split(arrange):
    def make(module):
        def split_heads(self, x):
            batch, length, width = x.shape
            return arrange(x, batch, length, self.num_heads, width // self.num_heads)
        return split_heads
    return make


def _split_axes(order):
    return _split(lambda x, B, T, H, d_k: x.reshape(B, T, H, d_k).transpose(order))


def _combine(arrange):
    def make(module):
        def combine_heads(self, x):
            batch, heads, length, d_k = x.shape
            return arrange(x, batch, heads, length, d_k)
        return combine_heads
    return make


def _in_order(x, B, H, T, d_k):
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)


# ---- forward twins -------------------------------------------------------------------------
def _right(x, W):
    return x @ W


def layer_norm(x, eps=1e-5):
    """Each position normalised over the model width: a Transformer block's step, not the attention layer's."""
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(axis=-1, keepdims=True) + eps)


def unit_length(x):
    """Each position scaled to length 1 over the model width, not centred (an L2 normalisation)."""
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def rms_norm(x):
    """Each position divided by its root mean square over the model width, not centred (an RMS norm; a
    student's epsilon of 1e-8 or less changes nothing the comparison sees)."""
    return x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True))


def _forward(*, project=_right, project_output=None, output=True, keys_from_query=False, weights_from=None,
             returned=None, inputs=None, query_step=None, finish=None):
    """A forward whose projections, inputs, weights or returned value are mistaken; ``inputs`` changes Q, K
    and V before the layer sees them (``query_step`` Q alone), ``finish(out, Q)`` its output."""
    def make(module):
        def forward(self, Q, K, V, return_weights=False):
            if inputs is not None:
                Q, K, V = inputs(Q), inputs(K), inputs(V)
            if query_step is not None:
                Q = query_step(Q)
            query_input = Q
            W = {name: getattr(self, name) for name in ("W_Q", "W_K", "W_V", "W_O")}
            if weights_from is not None:
                W = {name: W[weights_from.get(name, name)] for name in W}
            if keys_from_query:
                K = V = Q
            queries = self.split_heads(project(Q, W["W_Q"]))  # (B, H, T, d_k)
            keys = self.split_heads(project(K, W["W_K"]))  # (B, H, S, d_k)
            values = self.split_heads(project(V, W["W_V"]))  # (B, H, S, d_k)
            heads, weights = module.scaled_dot_product_attention(queries, keys, values)
            out = self.combine_heads(heads)  # (B, T, D)
            if output:
                out = (project_output or project)(out, W["W_O"])
            if finish is not None:
                out = finish(out, query_input)
            if returned is not None:
                return returned(out, weights, return_weights)
            return (out, weights) if return_weights else out
        return forward
    return make


def _method(name):
    return f"{CLASS}.{name}"


SOFTMAX, ATTENTION = "softmax", "scaled_dot_product_attention"
SPLIT, COMBINE, FORWARD = _method("split_heads"), _method("combine_heads"), _method("forward")
SPLIT_ORDERS = ((0, 1, 2, 3), (0, 2, 3, 1), (0, 3, 1, 2), (1, 2, 0, 3), (2, 0, 1, 3), (0, 1, 3, 2), (2, 1, 0, 3),
                (1, 0, 2, 3))

TWINS: tuple[Twin, ...] = (
    Twin("softmax-unstable", "exp without subtracting the max", SOFTMAX, _unstable),
    Twin("softmax-global-max", "subtracts the global max", SOFTMAX, _global_max),
    Twin("softmax-wrong-axis", "normalizes over axis 0", SOFTMAX, _over_axis(0)),
    Twin("softmax-wrong-axis", "normalizes over axis -2", SOFTMAX, _over_axis(-2)),
    Twin("softmax-wrong-axis", "normalizes over axis 1", SOFTMAX, _over_axis(1)),
    Twin("softmax-wrong-axis", "normalizes over the whole array", SOFTMAX, _whole_array(shifted=True)),
    Twin("softmax-wrong-axis", "normalizes over the whole array, unshifted", SOFTMAX, _whole_array(shifted=False)),
    Twin("softmax-no-keepdims", "row max without keepdims", SOFTMAX, _no_keepdims(on_max=True, on_sum=False)),
    Twin("softmax-no-keepdims", "row sum without keepdims", SOFTMAX, _no_keepdims(on_max=False, on_sum=True)),
    Twin("softmax-no-keepdims", "max and sum without keepdims", SOFTMAX, _no_keepdims(on_max=True, on_sum=True)),
    Twin("attention-no-scale", "no scaling", ATTENTION, _attention(scale=lambda s, Q, K: s)),
    Twin("attention-wrong-scale", "divides by d_k", ATTENTION, _attention(scale=lambda s, Q, K: s / Q.shape[-1])),
    Twin("attention-wrong-scale", "multiplies by sqrt(d_k)", ATTENTION,
         _attention(scale=lambda s, Q, K: s * np.sqrt(Q.shape[-1]))),
    Twin("attention-wrong-scale", "divides by sqrt(D)", ATTENTION,
         _attention(scale=lambda s, Q, K: s / np.sqrt(Q.shape[-1] * Q.shape[1]))),
    Twin("attention-wrong-scale", "divides by sqrt(S)", ATTENTION,
         _attention(scale=lambda s, Q, K: s / np.sqrt(K.shape[-2]))),
    Twin("attention-wrong-scale", "divides by sqrt(T)", ATTENTION,
         _attention(scale=lambda s, Q, K: s / np.sqrt(Q.shape[-2]))),
    Twin("attention-wrong-scale", "divides by sqrt(H)", ATTENTION,
         _attention(scale=lambda s, Q, K: s / np.sqrt(Q.shape[1]))),
    Twin("attention-scale-after-softmax", "scales the weights after the softmax", ATTENTION,
         _attention(after_softmax="weights")),
    Twin("attention-scale-after-softmax", "scales the output after the softmax", ATTENTION,
         _attention(after_softmax="output")),
    Twin("attention-wrong-transpose", "K.T on 4-D", ATTENTION, _attention(keys=lambda K: K.T)),
    Twin("attention-wrong-transpose", "swaps axes 1 and 2 of K", ATTENTION,
         _attention(keys=lambda K: K.transpose(0, 2, 1, 3))),
    Twin("attention-wrong-transpose", "swaps heads and width of K", ATTENTION,
         _attention(keys=lambda K: K.transpose(0, 3, 2, 1))),
    Twin("attention-wrong-transpose", "no transpose of K", ATTENTION, _attention(keys=lambda K: K)),
    Twin("attention-softmax-wrong-axis", "softmax over the queries", ATTENTION, _attention(axis=-2)),
    Twin("attention-softmax-wrong-axis", "softmax over the heads", ATTENTION, _attention(axis=1)),
    Twin("attention-softmax-wrong-axis", "softmax over the batch", ATTENTION, _attention(axis=0)),
    Twin("attention-causal-mask", "masks each query's later keys", ATTENTION, _attention(scale=_causal)),
    Twin("attention-returns-scores", "returns the scaled scores", ATTENTION, _attention(returns_scores="scaled")),
    Twin("attention-returns-scores", "returns the unscaled scores", ATTENTION, _attention(returns_scores="raw")),
    Twin("attention-wrong-value-product", "weights @ K", ATTENTION, _attention(product=lambda w, K, V: w @ K)),
    Twin("attention-wrong-value-product", "transposed weights @ V", ATTENTION,
         _attention(product=lambda w, K, V: np.swapaxes(w, -1, -2) @ V)),
    Twin("attention-wrong-value-product", "V @ weights", ATTENTION, _attention(product=lambda w, K, V: V @ w)),
    Twin("attention-wrong-value-product", "weights @ V^T", ATTENTION,
         _attention(product=lambda w, K, V: w @ np.swapaxes(V, -1, -2))),
    Twin("attention-wrong-value-product", "weights times V elementwise", ATTENTION,
         _attention(product=lambda w, K, V: w * V)),
    Twin("split-heads-no-transpose", "reshape straight to (B, H, T, d_k)", SPLIT,
         _split(lambda x, B, T, H, d_k: x.reshape(B, H, T, d_k))),
    Twin("split-heads-interleaved", "round-robin features", SPLIT,
         _split(lambda x, B, T, H, d_k: x.reshape(B, T, d_k, H).transpose(0, 3, 1, 2))),
    *(Twin("split-heads-wrong-axes", f"transpose{order}", SPLIT, _split_axes(order)) for order in SPLIT_ORDERS),
    Twin("combine-heads-no-transpose", "reshape straight to (B, T, D)", COMBINE,
         _combine(lambda x, B, H, T, d_k: x.reshape(B, T, H * d_k))),
    Twin("combine-heads-wrong-order", "heads in reverse order", COMBINE,
         _combine(lambda x, B, H, T, d_k: _in_order(x[:, ::-1], B, H, T, d_k))),
    Twin("combine-heads-wrong-order", "heads interleaved", COMBINE,
         _combine(lambda x, B, H, T, d_k: x.transpose(0, 2, 3, 1).reshape(B, T, H * d_k))),
    Twin("mha-no-output-projection", "no W_O", FORWARD, _forward(output=False)),
    Twin("mha-wrong-projection", "x @ W.T", FORWARD, _forward(project=lambda x, W: x @ W.T)),
    Twin("mha-wrong-projection", "x @ W.T for Q, K and V", FORWARD,
         _forward(project=lambda x, W: x @ W.T, project_output=_right)),
    Twin("mha-wrong-projection", "x @ W_O.T at the output", FORWARD, _forward(project_output=lambda x, W: x @ W.T)),
    Twin("mha-wrong-projection", "W @ x", FORWARD, _forward(project=lambda x, W: W @ x)),
    Twin("mha-wrong-projection", "W_Q for every input", FORWARD, _forward(weights_from={"W_K": "W_Q", "W_V": "W_Q"})),
    Twin("mha-wrong-projection", "W_Q and W_K swapped", FORWARD, _forward(weights_from={"W_Q": "W_K", "W_K": "W_Q"})),
    Twin("mha-wrong-projection", "W_K and W_V swapped", FORWARD, _forward(weights_from={"W_K": "W_V", "W_V": "W_K"})),
    Twin("mha-wrong-projection", "W_K for the values", FORWARD, _forward(weights_from={"W_V": "W_K"})),
    Twin("mha-wrong-projection", "W_Q and W_V swapped", FORWARD, _forward(weights_from={"W_Q": "W_V", "W_V": "W_Q"})),
    Twin("mha-ignores-key-value", "keys and values from the query input", FORWARD, _forward(keys_from_query=True)),
    Twin("mha-adds-residual", "adds the query input to the output", FORWARD, _forward(finish=lambda out, Q: out + Q)),
    Twin("mha-adds-layer-norm", "layer norm of the output", FORWARD, _forward(finish=lambda out, Q: layer_norm(out))),
    Twin("mha-adds-layer-norm", "layer norm of Q, K and V", FORWARD, _forward(inputs=layer_norm)),
    Twin("mha-adds-layer-norm", "layer norm of Q alone", FORWARD, _forward(query_step=layer_norm)),
    Twin("mha-adds-layer-norm", "RMS norm of Q, K and V", FORWARD, _forward(inputs=rms_norm)),
    Twin("mha-adds-layer-norm", "Q, K and V scaled to unit length", FORWARD, _forward(inputs=unit_length)),
    Twin("mha-wrong-weights-returned", "weights averaged over heads", FORWARD,
         _forward(returned=lambda out, w, asked: (out, w.mean(axis=1)) if asked else out)),
    Twin("mha-wrong-weights-returned", "always returns a tuple", FORWARD,
         _forward(returned=lambda out, w, asked: (out, w))),
    Twin("mha-wrong-weights-returned", "ignores return_weights", FORWARD,
         _forward(returned=lambda out, w, asked: out)),
    Twin("mha-wrong-weights-returned", "returns (weights, out)", FORWARD,
         _forward(returned=lambda out, w, asked: (w, out) if asked else out)),
)


# ---- how feedback names each function's call, values and mistakes ---------------------------
CALL_TEXT = {
    "softmax": "softmax(x)", "scaled_dot_product_attention": "scaled_dot_product_attention(Q, K, V)",
    "split_heads": "split_heads(x)", "combine_heads": "combine_heads(x)", "forward": "forward(Q, K, V)",
}
LEGENDS = {
    "softmax": "x.shape", "scaled_dot_product_attention": ("(B, H, T, d_k)", "(B, H, T, S)"),
    "split_heads": "(B, H, T, d_k)", "combine_heads": "(B, T, D)", "forward": "(B, T, D)",
}
ARGUMENT_NAMES = {
    "softmax": ("x",), "scaled_dot_product_attention": ("Q", "K", "V"),
    "split_heads": ("x",), "combine_heads": ("x",), "forward": ("Q", "K", "V"),
}
MUTATION_IDS = {
    "softmax": "softmax-mutates-input", "scaled_dot_product_attention": "attention-mutates-input",
    "split_heads": "mha-mutates-input", "combine_heads": "mha-mutates-input", "forward": "mha-mutates-input",
}
TRANSPOSES = (".T", "transpose", "swapaxes", "moveaxis", "rollaxis")
SHAPE_ERRORS = ("matmul", "axes don't match", "dot", "shapes", "broadcast", "einstein", "subscripts", "operand",
                "mismatch", "aligned")
# Exceptions no twin reproduces exactly, told apart by their message, the line that raised and which of the
# student's functions the call had entered by then (the worker's record).
# math.exp and friends raise instead of returning inf: an exponent above 709, never shifted. Raised in
# attention's or forward's own code (np.vectorize(math.exp) over the scores), it is their own exponential;
# raised in a softmax they called, the root cause says so.
OVERFLOW_RAISED = ErrorRule("softmax-unstable", types=("OverflowError",))
ERROR_RULES = {
    # an axis the input does not have: the reductions name a fixed axis (the keys' axis of 4-D scores, say)
    # instead of the last one
    "softmax": (ErrorRule("softmax-no-keepdims", message_any=("broadcast",)), OVERFLOW_RAISED,
                ErrorRule("softmax-wrong-axis", types=("AxisError",), message_any=("out of bounds",))),
    "forward": (OVERFLOW_RAISED,),
    "scaled_dot_product_attention": (
        OVERFLOW_RAISED,
        # the line that failed turns K around; no twin raised the same error
        ErrorRule("attention-wrong-transpose", line_any=TRANSPOSES, message_any=SHAPE_ERRORS, own_body=True),
        # a shape error before the softmax was ever called is in the scores: Q against K arranged wrongly
        ErrorRule("attention-wrong-transpose", message_any=SHAPE_ERRORS, unreached=("softmax",), own_body=True),
    ),
    "split_heads": (ErrorRule("split-heads-hardcoded-shape", message_any=("cannot reshape",)),),
}
SIZES_OF_ONE = ("one-query", "one-key", "one-batch")  # many mistakes coincide there: show, do not name
# A softmax mistake in attention's own code (it never calls softmax) is attention's own axis mistake.
INLINE_IDS = {"scaled_dot_product_attention": {"softmax-wrong-axis": "attention-softmax-wrong-axis"},
              # a forward doing the attention itself that hands back its scores: the weights forward returns
              "forward": {"softmax-wrong-axis": "attention-softmax-wrong-axis",
                          "attention-returns-scores": "mha-wrong-weights-returned"}}
SIGNATURES = {
    "softmax": ("normalizer",), "scaled_dot_product_attention": ("attention",), "split_heads": ("heads-layout",),
    "combine_heads": ("features-layout",), "forward": ("multihead", "block-steps"),
}
# Rows that overflow or underflow: which mistake each pattern of broken rows points at.
OVERFLOW_IDS = {function: ("softmax-unstable", "softmax-global-max")
                for function in ("softmax", "scaled_dot_product_attention", "forward")}


def _case(prefix: str, name: str, function: str, args: tuple, sizes: Sizes, *, kwargs=None, weights=None,
          heads: int | None = None, companion: str | None = None, evidence: dict | None = None,
          calls: tuple | None = None) -> Case:
    method = function in METHODS
    returns_weights = bool((kwargs or {}).get("return_weights"))
    init = (sizes.D, heads or sizes.H) if method else None
    if function == "forward" and returns_weights:
        evidence = _projected_heads(init, args, weights)
        evidence["logits"] = _scores(evidence["query_heads"], evidence["key_heads"])
    case = Case(
        id=f"{prefix}{name}", function=function, args=args, kwargs=kwargs or {},
        class_name=CLASS if method else None,
        init=init,
        weights=weights,
        call_text="forward(Q, K, V, return_weights=True)" if returns_weights else CALL_TEXT[function],
        legend=("(B, T, D)", "(B, H, T, S)") if returns_weights else LEGENDS[function],
        argument_names=ARGUMENT_NAMES[function], mutation_id=MUTATION_IDS[function],
        error_rules=ERROR_RULES.get(function, ()), overflow_ids=OVERFLOW_IDS.get(function),
        structure_mistake="mha-wrong-weights-returned" if function == "forward" else None,
        exercise=ASSIGNMENT, signatures=SIGNATURES[function], companion=companion,
        names_mistakes=name.split("/")[1] not in SIZES_OF_ONE, inline_ids=INLINE_IDS.get(function),
        output_names=("out", "weights") if returns_weights or function == ATTENTION else
        ("out",) if function == "forward" else None,
        evidence=evidence, calls=calls,
    )
    return with_expectations(case, ASSIGNMENT, TWINS)


PROJECTIONS = {"Q": ("W_Q", "W_K", "W_V"), "K": ("W_K", "W_Q", "W_V"), "V": ("W_V", "W_Q", "W_K")}


def _projected_heads(init: tuple, args: tuple, weights: dict) -> dict:
    """The reference's heads of each projected input, and of inputs projected with the wrong matrix:
    what the forward signature compares the student's weights and output with."""
    model = getattr(load_reference(ASSIGNMENT), CLASS)(*init)
    inputs = dict(zip("QKV", args))
    evidence, wrong = {}, {}
    for letter, (right, *others) in PROJECTIONS.items():
        x = inputs[letter]
        evidence[{"Q": "query_heads", "K": "key_heads", "V": "value_heads"}[letter]] = model.split_heads(
            x @ weights[right])
        wrong[f"{letter} @ {right}.T"] = model.split_heads(x @ weights[right].T)
        for other in others:
            wrong[f"{letter} @ {other}"] = model.split_heads(x @ weights[other])
    evidence["projections"] = wrong
    return evidence


def masked_logits(rng: np.random.Generator) -> np.ndarray:
    x = floats(rng, 3, 6, scale=2.0)
    x[0, [1, 4]] = -np.inf
    x[1, 0] = -np.inf
    x[2, [0, 2, 3, 5]] = -np.inf
    return x


# Rows of scores near +-1000 (after the 1/sqrt(d_k) scale): (offset, slope) of each designed query, its scores
# being offset + slope * k for keys k spread evenly over [-1, 1]: near +1000, far below every other row (~-1400),
# and one query whose scores span -1000 ... +1000. Their top score stands 17 or more above the next, so the right
# weights are one-hot to float32 precision, while an unshifted exponential overflows (inf / inf), one global shift
# underflows the low row (0 / 0), and a mean-centred one overflows the spanning row.
LARGE_ROWS = ((940.0, 60.0), (-1440.0, 60.0), (0.0, 1000.0))


def large_logit_heads(rng: np.random.Generator, B: int, H: int, T: int, S: int, d_k: int):
    """``(queries, keys)``, ``(B, H, T, d_k)`` and ``(B, H, S, d_k)``, whose first queries score the keys near
    +-1000 (``LARGE_ROWS``); the other queries are small random floats, so every other mistake still shows."""
    spread = np.stack([rng.permutation(np.linspace(-1.0, 1.0, S)) for _ in range(B * H)]).reshape(B, H, S)
    keys = floats(rng, B, H, S, d_k)
    keys[..., 0], keys[..., 1] = 1.0, spread  # feature 0 carries a row's offset, feature 1 its slope
    queries = floats(rng, B, H, T, d_k)
    for row, (offset, slope) in enumerate(LARGE_ROWS[:T]):
        queries[:, :, row] = 0.0
        queries[:, :, row, 0] = (offset + rng.uniform(-5.0, 5.0)) * np.sqrt(d_k)
        queries[:, :, row, 1] = slope * np.sqrt(d_k)
    return queries, keys


def _scores(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    return queries @ np.swapaxes(keys, -1, -2) / np.sqrt(queries.shape[-1])  # (B, H, T, S)


def _orthogonal(rng: np.random.Generator, D: int) -> np.ndarray:
    return np.linalg.qr(floats(rng, D, D))[0]  # (D, D), its inverse its transpose


def _large_logit_inputs(rng: np.random.Generator, sizes: Sizes, weights: dict) -> tuple[tuple, dict]:
    """forward's inputs whose projected heads score near +-1000, and the weights that project them so: W_Q and
    W_K orthogonal (their inverses exact), W_V and W_O the other cases'."""
    B, H, T, S, d_k, D = sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.D
    queries, keys = large_logit_heads(rng, B, H, T, S, d_k)
    own = dict(weights, W_Q=_orthogonal(rng, D), W_K=_orthogonal(rng, D))
    merged = lambda heads: np.swapaxes(heads, 1, 2).reshape(B, heads.shape[2], D)  # (B, H, L, d_k) -> (B, L, D)
    inputs = (merged(queries) @ own["W_Q"].T, merged(keys) @ own["W_K"].T, floats(rng, B, S, D))
    return inputs, own


def other_head_count(sizes: Sizes) -> int:
    """A number of heads dividing D with neither H nor d_k of these sizes; 1 when D has none."""
    D = sizes.D
    return next((h for h in range(2, D) if D % h == 0 and h != sizes.H and D // h != sizes.d_k), 1)


def _weights(rng: np.random.Generator, D: int) -> dict:
    return {name: floats(rng, D, D, scale=1.0 / np.sqrt(D)) for name in ("W_Q", "W_K", "W_V", "W_O")}


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the core exercise for these sizes, keyed by name."""
    B, H, T, S, d_k, D = sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.D
    weights = _weights(rng, D)
    queries_in, keys_in = floats(rng, B, T, D), floats(rng, B, S, D)
    values_in = floats(rng, B, S, D)
    self_in = floats(rng, B, T, D)
    same_key = np.repeat(floats(rng, B, H, 1, d_k), S, axis=2)
    specs = [
        ("softmax/1d", "softmax", (floats(rng, S + 2, scale=2.0),), {}),
        ("softmax/2d", "softmax", (floats(rng, T, S, scale=2.0),), {}),
        ("softmax/4d", "softmax", (floats(rng, B, H, T, S, scale=2.0),), {}),
        ("softmax/square", "softmax", (floats(rng, T, T, scale=2.0),), {}),
        ("softmax/stability", "softmax", (stability_logits(rng),), {}),
        ("softmax/neg-inf", "softmax", (masked_logits(rng),), {}),
        ("attention/cross", "scaled_dot_product_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, S, d_k), floats(rng, B, H, S, d_k)), {}),
        ("attention/self", "scaled_dot_product_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, T, d_k), floats(rng, B, H, T, d_k)), {}),
        ("attention/identical-keys", "scaled_dot_product_attention",
         (floats(rng, B, H, T, d_k), same_key, floats(rng, B, H, S, d_k)), {}),
        ("split/cross", "split_heads", (queries_in,), {}),
        ("split/one", "split_heads", (floats(rng, 1, 1, D),), {}),
        ("split/long", "split_heads", (floats(rng, B + 2, T + S, D),), {}),
        ("combine/cross", "combine_heads", (floats(rng, B, H, T, d_k),), {}),
        ("combine/long", "combine_heads", (floats(rng, B + 1, H, S + 2, d_k),), {}),
        ("forward/cross", "forward", (queries_in, keys_in, values_in), {}),
        ("forward/cross-weights", "forward", (queries_in, keys_in, values_in), {"return_weights": True}),
        ("forward/self-weights", "forward", (self_in, self_in.copy(), self_in.copy()), {"return_weights": True}),
    ]
    # A single query (one decoding step), a single key, a batch of one, keys as wide as a head (S = d_k:
    # a K used without its transpose gives values instead of an error), and the companions with S = T of
    # the cross-attention cases: right there and wrong with S != T is the keys' length taken from Q.
    one_query = floats(rng, B, 1, D)
    one_key, one_value = floats(rng, B, 1, D), floats(rng, B, 1, D)
    same_length_keys, same_length_values = floats(rng, B, T, D), floats(rng, B, T, D)
    single = floats(rng, 1, T, D), floats(rng, 1, S, D), floats(rng, 1, S, D)
    specs += [
        ("attention/one-query", "scaled_dot_product_attention",
         (floats(rng, B, H, 1, d_k), floats(rng, B, H, S, d_k), floats(rng, B, H, S, d_k)), {}),
        ("attention/one-key", "scaled_dot_product_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, 1, d_k), floats(rng, B, H, 1, d_k)), {}),
        ("attention/one-batch", "scaled_dot_product_attention",
         (floats(rng, 1, H, T, d_k), floats(rng, 1, H, S, d_k), floats(rng, 1, H, S, d_k)), {}),
        ("attention/keys-as-wide", "scaled_dot_product_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, d_k, d_k), floats(rng, B, H, d_k, d_k)), {}),
        ("forward/one-query", "forward", (one_query, keys_in, values_in), {"return_weights": True}),
        ("forward/one-key", "forward", (queries_in, one_key, one_value), {"return_weights": True}),
        ("forward/one-batch", "forward", single, {"return_weights": True}),
        ("forward/same-length", "forward", (queries_in, same_length_keys, same_length_values), {}),
        ("forward/same-length-weights", "forward", (queries_in, same_length_keys, same_length_values),
         {"return_weights": True}),
    ]
    companions = {"attention/cross": "attention/self", "forward/cross": "forward/same-length",
                  "forward/cross-weights": "forward/same-length-weights"}
    cases = {name: _case(prefix, name, function, args, sizes, kwargs=kwargs,
                         weights=weights if function == "forward" else None, companion=companions.get(name))
             for name, function, args, kwargs in specs}
    # One layer splitting the query input and then the key input (T != S), as forward does: sizes remembered
    # from the first call (kept on the instance) fail on the second. Drawn nothing new: the other cases keep
    # their inputs.
    cases["layer/split-twice"] = _case(prefix, "layer/split-twice", "split_heads", (), sizes, calls=(
        ("split_heads", (queries_in,), {}), ("split_heads", (keys_in,), {})))
    # The layer's own input split by a layer of another head count (another H and another d_k, where D has
    # one) and a batch of one sentence of several positions: a split whose sizes are constants is right on
    # the usual layer or the single sentence and wrong on the other. Drawn nothing new either.
    cases["split/other-heads"] = _case(prefix, "split/other-heads", "split_heads", (queries_in,), sizes,
                                       heads=other_head_count(sizes))
    cases["split/one-batch"] = _case(prefix, "split/one-batch", "split_heads", (single[0],), sizes)
    cases["forward/one-head"] = _case(prefix, "forward/one-head", "forward", (queries_in, keys_in, values_in), sizes,
                                      kwargs={"return_weights": True}, weights=weights, heads=1)
    # Scores near +-1000 through attention and through forward: an unshifted exponential anywhere on the path
    # overflows, whichever function computes it.
    queries, keys = large_logit_heads(rng, B, H, T, S, d_k)
    cases["attention/large-logits"] = _case(prefix, "attention/large-logits", ATTENTION,
                                            (queries, keys, floats(rng, B, H, S, d_k)), sizes,
                                            evidence={"logits": _scores(queries, keys)})
    # one row of +-1000 logits alone: a softmax that cannot broadcast a 2-D input still meets them in 1-D
    cases["softmax/stability-row"] = _case(prefix, "softmax/stability-row", "softmax",
                                           (stability_logits(rng)[[0, 2]].reshape(-1),), sizes)
    inputs, large_weights = _large_logit_inputs(rng, sizes, weights)
    cases["forward/large-logits"] = _case(prefix, "forward/large-logits", "forward", inputs, sizes,
                                          kwargs={"return_weights": True}, weights=large_weights)
    return link_companions(cases)


CASES = CaseSets(build_cases, PUBLIC_SEED)
public_cases, hidden_cases = CASES.public, CASES.hidden
