"""A two-layer, attention-only transformer in NumPy, small enough to read in one sitting.

The model (after Elhage et al., 2021, "A Mathematical Framework for
Transformer Circuits"): token and learned position embeddings are added into
a residual stream; each layer adds the output of a causal multi-head
self-attention; a final matrix turns the stream into next-token logits.
No MLP, no layer norm, no biases, so every number a head contributes can be
followed from input to logits.

Shape legend: ``B`` batch, ``L`` layers, ``H`` heads, ``T`` tokens
(queries and keys alike: self-attention), ``D`` width, ``d_k = D // H``,
``V`` vocabulary size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from grader.tinymodel.blocks import core_blocks
from grader.tinymodel.tokens import TOKENS

# The weights of one layer, named as in the multi-head attention exercise and applied as x @ W.
PROJECTIONS = ("W_Q", "W_K", "W_V", "W_O")


@dataclass(frozen=True)
class ModelConfig:
    """The model's sizes."""

    num_layers: int = 2
    num_heads: int = 4
    d_model: int = 32
    max_length: int = 32  # positions with a learned embedding, the start marker included
    vocab_size: int = len(TOKENS)

    @property
    def d_k(self) -> int:
        return self.d_model // self.num_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        return cls(**{name: int(value) for name, value in data.items()})


def parameter_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in a fixed order."""
    shapes = {"embedding": (config.vocab_size, config.d_model),  # (V, D)
              "positions": (config.max_length, config.d_model)}  # (T_max, D)
    for layer in range(config.num_layers):
        for name in PROJECTIONS:
            shapes[f"layer{layer}.{name}"] = (config.d_model, config.d_model)  # (D, D)
    shapes["unembedding"] = (config.d_model, config.vocab_size)  # (D, V)
    return shapes


def init_parameters(config: ModelConfig, *, seed: int) -> dict[str, np.ndarray]:
    """Normal draws with standard deviation 1/sqrt(fan-in), from a generator seeded by ``seed``."""
    generator = np.random.default_rng(seed)
    parameters = {}
    for name, shape in parameter_shapes(config).items():
        fan_in = shape[0] if name not in ("embedding", "positions") else shape[1]
        parameters[name] = generator.normal(0.0, 1.0 / np.sqrt(fan_in), shape)
    return parameters


def causal_mask(length: int) -> np.ndarray:
    """``(T, T)`` booleans, True where key j is at or before query i: no token sees the future."""
    positions = np.arange(length)
    return positions[None, :] <= positions[:, None]  # (T, T)


def split_heads(x: np.ndarray, num_heads: int) -> np.ndarray:
    """``(B, T, D)`` -> ``(B, H, T, d_k)``: head h owns features ``h*d_k:(h+1)*d_k`` (the core exercise's)."""
    return core_blocks().split_heads(x, num_heads)


def combine_heads(x: np.ndarray) -> np.ndarray:
    """``(B, H, T, d_k)`` -> ``(B, T, D)``, the exact inverse of ``split_heads`` (the core exercise's)."""
    return core_blocks().combine_heads(x)


@dataclass(frozen=True)
class LayerPass:
    """Every stage of one layer's attention, named as in ``grader.trace.STAGES``."""

    stages: dict[str, np.ndarray]

    @property
    def weights(self) -> np.ndarray:
        return self.stages["weights"]  # (B, H, T, T)


@dataclass(frozen=True)
class ForwardPass:
    """What one forward pass computed: logits, each layer's stages, the final stream."""

    ids: np.ndarray  # (B, T)
    layers: tuple[LayerPass, ...]
    final: np.ndarray  # (B, T, D), the residual stream after the last layer
    logits: np.ndarray  # (B, T, V); row t predicts token t + 1
    head_mask: np.ndarray  # (L, H), 1 for a head that takes part, 0 for an ablated one

    @property
    def weights(self) -> np.ndarray:
        """Attention weights of every layer, ``(L, B, H, T, T)``."""
        return np.stack([layer.weights for layer in self.layers])


def attention_layer(x: np.ndarray, weights: dict[str, np.ndarray], num_heads: int,
                    head_mask: np.ndarray) -> LayerPass:
    """Causal multi-head self-attention of ``x`` ``(B, T, D)``; ``head_mask`` ``(H,)`` zeroes heads."""
    length = x.shape[1]
    stages = {"inputs": x}
    stages["queries"] = x @ weights["W_Q"]  # (B, T, D)
    stages["keys"] = x @ weights["W_K"]  # (B, T, D)
    stages["values"] = x @ weights["W_V"]  # (B, T, D)
    for name in ("queries", "keys", "values"):
        stages[f"{name}_split"] = split_heads(stages[name], num_heads)  # (B, H, T, d_k)
    d_k = stages["queries_split"].shape[-1]
    stages["scores"] = stages["queries_split"] @ np.swapaxes(stages["keys_split"], -1, -2)  # (B, H, T, T)
    stages["scaled_scores"] = stages["scores"] / np.sqrt(d_k)  # (B, H, T, T)
    # -inf, not a large negative number: a future key must get exactly zero weight.
    masked = np.where(causal_mask(length), stages["scaled_scores"], -np.inf)  # (B, H, T, T)
    stages["weights"] = core_blocks().softmax(masked)  # (B, H, T, T)
    heads = stages["weights"] @ stages["values_split"]  # (B, H, T, d_k)
    stages["head_outputs"] = heads * head_mask[None, :, None, None]  # (B, H, T, d_k)
    stages["concatenated"] = combine_heads(stages["head_outputs"])  # (B, T, D)
    stages["output"] = stages["concatenated"] @ weights["W_O"]  # (B, T, D)
    return LayerPass(stages)


class TinyTransformer:
    """The model: ``config`` and ``parameters`` (see ``parameter_shapes``)."""

    def __init__(self, config: ModelConfig, parameters: dict[str, np.ndarray]):
        expected = parameter_shapes(config)
        if set(parameters) != set(expected):
            raise ValueError(f"parameters {sorted(parameters)} do not match the model's {sorted(expected)}")
        for name, shape in expected.items():
            if np.shape(parameters[name]) != shape:
                raise ValueError(f"parameter {name} has shape {np.shape(parameters[name])}; expected {shape}")
        self.config = config
        self.parameters = {name: np.asarray(parameters[name], dtype=np.float64) for name in expected}

    def layer_weights(self, layer: int) -> dict[str, np.ndarray]:
        """``W_Q, W_K, W_V, W_O`` of one layer, each ``(D, D)``."""
        return {name: self.parameters[f"layer{layer}.{name}"] for name in PROJECTIONS}

    def forward(self, ids: np.ndarray, *, head_mask: np.ndarray | None = None) -> ForwardPass:
        """Run the model on token ids ``(B, T)`` (or ``(T,)``); ``head_mask`` ``(L, H)`` ablates heads."""
        ids = np.atleast_2d(np.asarray(ids))  # (B, T)
        config = self.config
        length = ids.shape[1]
        if length > config.max_length:
            raise ValueError(f"{length} tokens; the model has positions for {config.max_length}")
        if head_mask is None:
            head_mask = np.ones((config.num_layers, config.num_heads))  # (L, H)
        stream = self.parameters["embedding"][ids] + self.parameters["positions"][:length]  # (B, T, D)
        layers = []
        for layer in range(config.num_layers):
            result = attention_layer(stream, self.layer_weights(layer), config.num_heads, head_mask[layer])
            layers.append(result)
            stream = stream + result.stages["output"]  # (B, T, D): each layer adds to the residual stream
        logits = stream @ self.parameters["unembedding"]  # (B, T, V)
        return ForwardPass(ids=ids, layers=tuple(layers), final=stream, logits=logits,
                           head_mask=np.asarray(head_mask, dtype=np.float64))


def next_token_loss(logits: np.ndarray, ids: np.ndarray, counted: np.ndarray | None = None
                    ) -> tuple[float, np.ndarray]:
    """Mean cross-entropy (nats) of predicting ``ids[:, t + 1]`` from ``logits[:, t]``, and its gradient.

    Args:
        logits: ``(B, T, V)``.
        ids: ``(B, T)`` token ids.
        counted: ``(B, T - 1)`` booleans, the predictions that count (default: all).

    Returns:
        ``(loss, dlogits)``, ``dlogits`` ``(B, T, V)`` (zero in the last row, which predicts nothing).
    """
    from scipy.special import log_softmax

    predicting = logits[:, :-1]  # (B, T-1, V)
    targets = ids[:, 1:]  # (B, T-1)
    if counted is None:
        counted = np.ones(targets.shape, dtype=bool)
    # SciPy's log-softmax, not one written here: the stable softmax is the core exercise's to write.
    log_probabilities = log_softmax(predicting, axis=-1)  # (B, T-1, V)
    probabilities = np.exp(log_probabilities)  # (B, T-1, V)
    picked = np.take_along_axis(log_probabilities, targets[..., None], axis=-1)[..., 0]  # (B, T-1)
    count = max(int(counted.sum()), 1)
    loss = float(-picked[counted].sum() / count)
    # d(-log p_target)/dlogits = p - onehot(target), averaged over the counted predictions.
    onehot = np.arange(probabilities.shape[-1]) == targets[..., None]  # (B, T-1, V)
    dpredicting = (probabilities - onehot) * (counted[..., None] / count)  # (B, T-1, V)
    dlogits = np.zeros_like(logits)
    dlogits[:, :-1] = dpredicting
    return loss, dlogits
