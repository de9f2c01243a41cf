# expect: correct
# Softmax keeps a running max and rescaled running sum column by column (online log-sum-exp); head layout lives in a __slots__ helper. No mistakes.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=np.float64)
    run_max = np.full(x.shape[:-1], -np.inf)
    run_sum = np.zeros(x.shape[:-1])
    for j in range(x.shape[-1]):
        col = x[..., j]
        new_max = np.maximum(run_max, col)
        dead = np.isneginf(new_max)          # nothing finite seen yet in this row
        safe = np.where(dead, 0.0, new_max)
        run_sum = np.where(dead, 0.0,
                           run_sum * np.exp(run_max - safe) + np.exp(col - safe))
        run_max = new_max
    return np.exp(x - run_max[..., None]) / run_sum[..., None]


def scaled_dot_product_attention(Q, K, V):
    logits = np.matmul(Q, np.swapaxes(K, -2, -1))
    logits = logits / np.sqrt(Q.shape[-1])
    p = softmax(logits)
    return np.matmul(p, V), p


class _HeadGeometry:
    __slots__ = ("heads", "width")

    def __init__(self, heads, width):
        self.heads = heads
        self.width = width

    def cut(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.heads, self.width).transpose(0, 2, 1, 3)

    def glue(self, x):
        b, _, t, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, self.heads * self.width)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        d_k, rest = divmod(d_model, num_heads)
        if rest:
            raise ValueError(f"{num_heads} heads cannot share d_model={d_model} evenly")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_k
        self._geo = _HeadGeometry(num_heads, d_k)
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        return self._geo.cut(x)

    def combine_heads(self, x):
        return self._geo.glue(x)

    def forward(self, Q, K, V, return_weights=False):
        heads = [self.split_heads(inp @ W)
                 for inp, W in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V))]
        ctx, p = scaled_dot_product_attention(*heads)
        y = self.combine_heads(ctx) @ self.W_O
        return (y, p) if return_weights else y
