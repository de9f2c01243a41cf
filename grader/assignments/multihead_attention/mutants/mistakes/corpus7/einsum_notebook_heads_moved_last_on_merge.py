# expect: combine-heads-wrong-order
# combine_heads moves the head axis to the very end (np.moveaxis(x, 1, -1)) before flattening, so the merged features come out d_k-major (interleaved) instead of head by head.
import numpy as np


def softmax(x):
    x = np.asarray(x)
    shift = x - x.max(axis=-1, keepdims=True)
    ex = np.exp(shift)
    return ex / ex.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    dk = Q.shape[-1]
    logits = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(dk)
    w = softmax(logits)
    return np.einsum("...qk,...kd->...qd", w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} not divisible by {num_heads}")
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
        B, T, D = x.shape
        return np.einsum("bthd->bhtd", x.reshape(B, T, self.num_heads, self.d_k))

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        # heads axis out of the way, then flatten the features
        return np.moveaxis(x, 1, -1).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.einsum("btd,de->bte", Q, self.W_Q))
        k = self.split_heads(np.einsum("bsd,de->bse", K, self.W_K))
        v = self.split_heads(np.einsum("bsd,de->bse", V, self.W_V))
        heads, w = scaled_dot_product_attention(q, k, v)
        out = np.einsum("btd,de->bte", self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, w
        return out
