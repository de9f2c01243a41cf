# expect: correct
# Leans on SciPy: scipy.special.softmax over the last axis, and an optional
# mask argument (unused here) as the layer in a larger model would take.
import numpy as np
from scipy.special import softmax as _scipy_softmax


def softmax(x):
    return _scipy_softmax(x, axis=-1)


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False, mask=None):
        out, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                              self.split_heads(V @ self.W_V), mask=mask)
        out = self.combine_heads(out) @ self.W_O
        return (out, w) if return_weights else out
