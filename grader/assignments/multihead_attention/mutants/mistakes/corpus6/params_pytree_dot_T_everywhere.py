# expect: attention-wrong-transpose, mha-wrong-projection
# attention transposes K with K.T, which reverses all four axes instead of swapping the last two (raises for almost every shape); the dense helper in forward projects with x @ W.T (torch Linear habit) instead of x @ W.
"""Port of my JAX/flax-style MHA to plain NumPy.

Everything is a pure function of a params pytree (a dict of arrays); the class
at the bottom only exists because the exercise wants one.
"""

import numpy as np


def init_params(d_model, seed=0):
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(d_model)
    return {
        name: rng.normal(0.0, scale, (d_model, d_model))
        for name in ("query", "key", "value", "out")
    }


def softmax(x):
    x = np.asarray(x)
    x_max = np.max(x, axis=-1, keepdims=True)
    unnormalized = np.exp(x - x_max)
    return unnormalized / np.sum(unnormalized, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    depth = Q.shape[-1]
    logits = Q @ K.T / np.sqrt(depth)
    weights = softmax(logits)
    return weights @ V, weights


def dense(kernel, x):
    return x @ kernel.T


def split(x, num_heads):
    *lead, length, features = x.shape
    x = x.reshape(*lead, length, num_heads, features // num_heads)
    return np.swapaxes(x, -3, -2)


def merge(x):
    x = np.swapaxes(x, -3, -2)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


def mha_apply(params, q_in, k_in, v_in, num_heads):
    q = split(dense(params["query"], q_in), num_heads)
    k = split(dense(params["key"], k_in), num_heads)
    v = split(dense(params["value"], v_in), num_heads)
    heads, weights = scaled_dot_product_attention(q, k, v)
    return dense(params["out"], merge(heads)), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide d_model={d_model}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        params = init_params(d_model)
        self.W_Q, self.W_K = params["query"], params["key"]
        self.W_V, self.W_O = params["value"], params["out"]

    @property
    def params(self):
        return {"query": self.W_Q, "key": self.W_K, "value": self.W_V, "out": self.W_O}

    def split_heads(self, x):
        return split(x, self.num_heads)

    def combine_heads(self, x):
        return merge(x)

    def forward(self, Q, K, V, return_weights=False):
        out, weights = mha_apply(self.params, Q, K, V, self.num_heads)
        if return_weights:
            return out, weights
        return out
