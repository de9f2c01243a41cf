"""Cases and buggy twins of the memory-efficient attention exercise (``solutions/memory_efficient_attention.py``).

Graded: ``memory_efficient_attention``. Values are compared with plain
attention; the hidden suite also measures, in the worker, the peak memory
a call allocates (``Sandbox.call_measured``) on sequences long enough that
the full score matrix would dwarf a block of it.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.twinning import Twin, floats, with_expectations
from grader.grading.case import Case

ASSIGNMENT = "memory_efficient_attention"
PUBLIC_SEED = 20240704
FUNCTION = "memory_efficient_attention"
# The memory check: T = S = MEMORY_LENGTH keys in blocks of MEMORY_BLOCK.
MEMORY_LENGTHS = (1024, 2048)
MEMORY_BLOCK = 64
MEMORY_D_K = 16


# ---- twins ------------------------------------------------------------------------------
def _blockwise(*, rescale_sum=True, rescale_output=True, final_division=True):
    """The online softmax with one of its three rescalings left out."""
    def make(module):
        def memory_efficient_attention(Q, K, V, block_size=64, causal=False):
            T, S = Q.shape[-2], K.shape[-2]
            m = np.full(Q.shape[:-1] + (1,), -np.inf)
            total = np.zeros(Q.shape[:-1] + (1,))
            acc = np.zeros(Q.shape)
            for start in range(0, S, block_size):
                stop = min(start + block_size, S)
                scores = Q @ np.swapaxes(K[..., start:stop, :], -1, -2) / np.sqrt(Q.shape[-1])
                if causal:
                    visible = np.arange(start, stop)[None, :] <= np.arange(S - T, S)[:, None]
                    scores = np.where(visible, scores, -np.inf)
                new_m = np.maximum(m, scores.max(axis=-1, keepdims=True))
                safe = np.where(np.isfinite(new_m), new_m, 0.0)
                correction = np.exp(m - safe)
                p = np.exp(scores - safe)
                total = (total * correction if rescale_sum else total) + p.sum(axis=-1, keepdims=True)
                acc = (acc * correction if rescale_output else acc) + p @ V[..., start:stop, :]
                m = new_m
            return acc / total if final_division else acc
        return memory_efficient_attention
    return make


TWINS: tuple[Twin, ...] = (
    Twin("flash-no-rescale-sum", "running sum not multiplied by exp(m_old - m_new)", FUNCTION,
         _blockwise(rescale_sum=False)),
    Twin("flash-no-rescale-output", "running output not multiplied by exp(m_old - m_new)", FUNCTION,
         _blockwise(rescale_output=False)),
    Twin("flash-no-final-rescale", "returns the output without dividing by the running sum", FUNCTION,
         _blockwise(final_division=False)),
)


# ---- cases --------------------------------------------------------------------------------
def _case(prefix: str, name: str, args: tuple, kwargs: dict) -> Case:
    text = ", ".join([f"block_size={kwargs['block_size']}"] + (["causal=True"] if kwargs.get("causal") else []))
    case = Case(id=f"{prefix}{name}", function=FUNCTION, args=args, kwargs=kwargs, legend="(B, H, T, d_k)",
                call_text=f"memory_efficient_attention(Q, K, V, {text})", argument_names=("Q", "K", "V"))
    return with_expectations(case, ASSIGNMENT, TWINS)


def build_cases(rng: np.random.Generator, B: int, H: int, T: int, S: int, d_k: int, block: int,
                prefix: str) -> dict[str, Case]:
    """Every value case of the exercise for these sizes (block does not divide S), keyed by name."""
    def qkv(queries: int, keys: int, scale: float = 1.5) -> tuple:
        return (floats(rng, B, H, queries, d_k, scale=scale), floats(rng, B, H, keys, d_k, scale=scale),
                floats(rng, B, H, keys, d_k))
    specs = {
        "flash/one-block": (qkv(T, S), {"block_size": S + 3}),
        "flash/blocks": (qkv(T, S), {"block_size": block}),
        "flash/block-of-one": (qkv(T, S), {"block_size": 1}),
        "flash/causal": (qkv(S, S), {"block_size": block, "causal": True}),
        "flash/causal-cached": (qkv(T, S), {"block_size": block, "causal": True}),
        "flash/large-logits": (qkv(T, S, scale=12.0), {"block_size": block}),
    }
    return {name: _case(prefix, name, args, kwargs) for name, (args, kwargs) in specs.items()}


def memory_inputs(seed: int, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V of shape (1, 1, length, MEMORY_D_K) for the peak-memory check."""
    rng = np.random.default_rng([seed, length])
    return tuple(floats(rng, 1, 1, length, MEMORY_D_K) for _ in range(3))


def public_cases(seed: int | None = None) -> dict[str, Case]:
    """The public cases: from the fixed seed (shipped), or drawn from ``seed`` in a graded run."""
    return build_cases(np.random.default_rng(PUBLIC_SEED if seed is None else seed), B=2, H=3, T=5, S=23, d_k=4, block=4, prefix="")


def hidden_cases(seed: int) -> dict[str, Case]:
    rng = np.random.default_rng(seed)
    B, H, T, d_k = int(rng.integers(1, 3)), int(rng.integers(2, 4)), int(rng.integers(3, 8)), int(rng.integers(2, 6))
    block = int(rng.integers(3, 7))
    S = T + block * int(rng.integers(3, 6)) + int(rng.integers(1, block))  # several blocks, a ragged last one
    return build_cases(rng, B=B, H=H, T=T, S=S, d_k=d_k, block=block, prefix="hidden:")
