# expect: mha-adds-residual, mha-adds-layer-norm
# Two mistakes: forward is written as a pre-norm Transformer sublayer, Q + attention(LN(Q), LN(K), LN(V)), so it both normalises its inputs and adds the skip connection.
"""Multi-head attention written the way a pre-norm Transformer sublayer is written.

A parameter-free layer_norm helper sits next to the attention, and forward
follows the x + sublayer(norm(x)) pattern familiar from GPT-style code; the
attention core itself is a private method.
"""

import numpy as np

EPS = 1e-5


def layer_norm(x, eps=EPS):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)

    def _attend(self, q_in, k_in, v_in):
        q = self.split_heads(q_in @ self.W_Q)
        k = self.split_heads(k_in @ self.W_K)
        v = self.split_heads(v_in @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        return self.combine_heads(heads) @ self.W_O, weights

    def forward(self, Q, K, V, return_weights=False):
        attn, weights = self._attend(layer_norm(Q), layer_norm(K), layer_norm(V))
        x = Q + attn
        if return_weights:
            return x, weights
        return x
