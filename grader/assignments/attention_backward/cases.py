"""Cases and buggy twins of the backward-pass exercise (``solutions/attention_backward.py``).

Graded: ``softmax_backward``, ``attention_backward`` and
``MultiHeadAttention.backward`` (``backward``). Every expected gradient is a
central-difference numerical gradient of the loss ``sum(out * dout)``,
computed here from the forward functions alone; the suites compare with
``rel_error``. Twins come from the reference's analytic backward with one
step changed.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case, Sizes
from grader.grading.reference import load_reference

ASSIGNMENT = "attention_backward"
PUBLIC_SEED = 20240705
STEP = 1e-5  # central differences: error ~ STEP**2, rounding ~ 1e-16 / STEP


def numerical_gradient(loss, x: np.ndarray, step: float = STEP) -> np.ndarray:
    """d loss / d x by central differences, one entry at a time (``x`` is restored)."""
    gradient = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        original = x[index]
        x[index] = original + step
        above = loss()
        x[index] = original - step
        below = loss()
        x[index] = original
        gradient[index] = (above - below) / (2 * step)
    return gradient


# ---- twins ------------------------------------------------------------------------------
def _elementwise(module):
    def softmax_backward(dweights, weights):
        return dweights * weights * (1.0 - weights)  # the Jacobian's diagonal only
    return softmax_backward


def _attention_backward_with(*, scale=True, dV=None, dweights=None, dK=None):
    def make(module):
        def attention_backward(dout, Q, K, V, weights):
            factor = 1.0 / np.sqrt(Q.shape[-1]) if scale else 1.0
            grad_V = np.swapaxes(weights, -1, -2) @ dout if dV is None else dV(dout, weights)
            grad_weights = dout @ np.swapaxes(V, -1, -2) if dweights is None else dweights(dout, V)
            dscores = module.softmax_backward(grad_weights, weights)
            grad_K = np.swapaxes(dscores, -1, -2) @ Q if dK is None else dK(dscores, Q)
            return dscores @ K * factor, grad_K * factor, grad_V
        return attention_backward
    return make


def _projection_backward_with(*, weight_gradient, input_gradient):
    def make(module):
        def backward(self, dout):
            Q, K, V, queries, keys, values, weights, combined = self.cache
            width = dout.shape[-1]
            self.dW_O = weight_gradient(combined.reshape(-1, width), dout.reshape(-1, width))
            dheads = self.split_heads(input_gradient(dout, self.W_O))
            dqueries, dkeys, dvalues = module.attention_backward(dheads, queries, keys, values, weights)
            gradients = []
            for x, dprojected, name in ((Q, dqueries, "W_Q"), (K, dkeys, "W_K"), (V, dvalues, "W_V")):
                dprojected = self.combine_heads(dprojected)
                setattr(self, "d" + name, weight_gradient(x.reshape(-1, width), dprojected.reshape(-1, width)))
                gradients.append(input_gradient(dprojected, getattr(self, name)))
            return tuple(gradients)
        return backward
    return make


_RIGHT_WEIGHT = lambda x, dy: x.T @ dy  # noqa: E731 - short, named by the table below
_RIGHT_INPUT = lambda dy, W: dy @ W.T  # noqa: E731

TWINS: tuple[Twin, ...] = (
    Twin("backward-elementwise-softmax", "dweights * w * (1 - w)", "softmax_backward", _elementwise),
    Twin("backward-no-scale", "dQ and dK not divided by sqrt(d_k)", "attention_backward",
         _attention_backward_with(scale=False)),
    Twin("backward-transpose-mixup", "dV = weights @ dout", "attention_backward",
         _attention_backward_with(dV=lambda dout, weights: weights @ dout)),
    Twin("backward-transpose-mixup", "dK = dscores @ Q", "attention_backward",
         _attention_backward_with(dK=lambda dscores, Q: dscores @ Q)),
    Twin("backward-transpose-mixup", "dweights = dout^T @ V", "attention_backward",
         _attention_backward_with(dweights=lambda dout, V: np.swapaxes(dout @ np.swapaxes(V, -1, -2), -1, -2))),
    Twin("backward-projection-transpose", "dW = dy^T @ x", "MultiHeadAttention.backward",
         _projection_backward_with(weight_gradient=lambda x, dy: dy.T @ x, input_gradient=_RIGHT_INPUT)),
    Twin("backward-projection-transpose", "dx = dy @ W", "MultiHeadAttention.backward",
         _projection_backward_with(weight_gradient=_RIGHT_WEIGHT, input_gradient=lambda dy, W: dy @ W)),
)


# ---- cases --------------------------------------------------------------------------------
def _softmax_case(prefix: str, name: str, rng: np.random.Generator, shape: tuple) -> Case:
    module = load_reference(ASSIGNMENT)
    scores, dweights = floats(rng, *shape, scale=1.5), floats(rng, *shape)
    weights = module.softmax(scores)
    case = Case(id=f"{prefix}{name}", function="softmax_backward", args=(dweights, weights),
                call_text="softmax_backward(dweights, weights)", legend="(..., S)",
                argument_names=("dweights", "weights"))
    expected = numerical_gradient(lambda: float(np.sum(module.softmax(scores) * dweights)), scores)
    return with_expectations(case, ASSIGNMENT, TWINS, expected=expected)


def _attention_case(prefix: str, name: str, rng: np.random.Generator, sizes: Sizes, keys: int) -> Case:
    module = load_reference(ASSIGNMENT)
    B, H, T, d_k = sizes.B, sizes.H, sizes.T, sizes.d_k
    Q, K, V = floats(rng, B, H, T, d_k), floats(rng, B, H, keys, d_k), floats(rng, B, H, keys, d_k)
    dout = floats(rng, B, H, T, d_k)
    _, weights = module.attention_forward(Q, K, V)
    case = Case(id=f"{prefix}{name}", function="attention_backward", args=(dout, Q, K, V, weights),
                call_text="attention_backward(dout, Q, K, V, weights)",
                legend=("(B, H, T, d_k)", "(B, H, S, d_k)", "(B, H, S, d_k)"),
                argument_names=("dout", "Q", "K", "V", "weights"))
    loss = lambda: float(np.sum(module.attention_forward(Q, K, V)[0] * dout))  # noqa: E731
    expected = tuple(numerical_gradient(loss, x) for x in (Q, K, V))
    return with_expectations(case, ASSIGNMENT, TWINS, expected=expected)


def _layer_case(prefix: str, name: str, rng: np.random.Generator, sizes: Sizes, keys: int) -> Case:
    module = load_reference(ASSIGNMENT)
    B, H, T, D = sizes.B, sizes.H, sizes.T, sizes.D
    weights = {name: floats(rng, D, D, scale=1.0 / np.sqrt(D)) for name in ("W_Q", "W_K", "W_V", "W_O")}
    Q, K, V, dout = floats(rng, B, T, D), floats(rng, B, keys, D), floats(rng, B, keys, D), floats(rng, B, T, D)
    calls = (("forward", (Q, K, V), {}), ("backward", (dout,), {}),
             *((f"d{name}", None, None) for name in ("W_Q", "W_K", "W_V", "W_O")))
    case = Case(id=f"{prefix}{name}", function="backward", args=(), class_name="MultiHeadAttention", init=(D, H),
                weights=weights, calls=calls, call_text="MultiHeadAttention.forward(Q, K, V) → .backward(dout)",
                legend=("(B, T, D)", ("(B, T, D)", "(B, S, D)", "(B, S, D)"), "(D, D)", "(D, D)", "(D, D)", "(D, D)"))
    layer = module.MultiHeadAttention(D, H)
    for key, value in weights.items():
        setattr(layer, key, value.copy())
    loss = lambda: float(np.sum(layer.forward(Q, K, V) * dout))  # noqa: E731
    inputs = tuple(numerical_gradient(loss, x) for x in (Q, K, V))
    parameters = tuple(numerical_gradient(loss, getattr(layer, key)) for key in ("W_Q", "W_K", "W_V", "W_O"))
    expected = (layer.forward(Q, K, V), inputs, *parameters)
    return with_expectations(case, ASSIGNMENT, TWINS, expected=expected)


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the backward-pass exercise for these sizes, keyed by name."""
    T, S = sizes.T, sizes.S
    return {
        "softmax/rows": _softmax_case(prefix, "softmax/rows", rng, (T, S)),
        "softmax/4d": _softmax_case(prefix, "softmax/4d", rng, (sizes.B, sizes.H, T, S)),
        "attention/cross": _attention_case(prefix, "attention/cross", rng, sizes, S),
        "attention/self": _attention_case(prefix, "attention/self", rng, sizes, T),
        "layer/cross": _layer_case(prefix, "layer/cross", rng, sizes, S),
        "layer/self": _layer_case(prefix, "layer/self", rng, sizes, T),
    }


CASES = CaseSets(build_cases, PUBLIC_SEED)
public_cases, hidden_cases = CASES.public, CASES.hidden
