# expect: mha-adds-layer-norm
# forward normalises its output over the feature axis ((out - mean) / sqrt(var + 1e-5)) after W_O, a layer norm that belongs to the transformer block, not to attention.
import logging

import numpy as np

logger = logging.getLogger("mha")
logger.addHandler(logging.NullHandler())

LN_EPS = 1e-5


def softmax(x):
    x = np.asarray(x)
    out = np.exp(x - np.max(x, axis=-1, keepdims=True))
    out = out / np.sum(out, axis=-1, keepdims=True)
    logger.debug("softmax %s", out.shape)
    return out


def scaled_dot_product_attention(Q, K, V):
    scale = 1.0 / np.sqrt(Q.shape[-1])
    scores = np.einsum("bhtd,bhsd->bhts", Q, K) * scale
    weights = softmax(scores)
    out = np.einsum("bhts,bhsd->bhtd", weights, V)
    logger.debug("attention out %s weights %s", out.shape, weights.shape)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            logger.error("bad head count %d for width %d", num_heads, d_model)
            raise ValueError("d_model % num_heads != 0")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))
        logger.debug("init d_model=%d heads=%d d_k=%d", d_model, num_heads, self.d_k)

    def split_heads(self, x):
        B, T, D = x.shape
        y = x.reshape(B, T, self.num_heads, self.d_k).swapaxes(1, 2)
        logger.debug("split %s -> %s", x.shape, y.shape)
        return y

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        y = x.swapaxes(1, 2).reshape(B, T, H * dk)
        logger.debug("combine %s -> %s", x.shape, y.shape)
        return y

    def forward(self, Q, K, V, return_weights=False):
        logger.debug("forward Q%s K%s V%s", Q.shape, K.shape, V.shape)
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        mu = out.mean(axis=-1, keepdims=True)
        var = out.var(axis=-1, keepdims=True)
        out = (out - mu) / np.sqrt(var + LN_EPS)
        logger.debug("forward out mean=%.3g", float(out.mean()))
        if return_weights:
            return out, weights
        return out
