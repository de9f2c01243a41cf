# expect: attention-scale-after-softmax
# The d ** -0.5 factor is kept in a variable and applied to the probabilities
# instead of the logits.
import numpy as np


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    p = np.exp(x - m)
    return p / p.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scale = Q.shape[-1] ** -0.5
    logits = np.einsum("...qd,...kd->...qk", Q, K)
    probs = softmax(logits) * scale
    return np.einsum("...qk,...kd->...qd", probs, V), probs


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("heads must divide the width")
        self.num_heads = num_heads

    def split_heads(self, x):
        return np.stack(np.split(x, self.num_heads, axis=-1), axis=1)

    def combine_heads(self, x):
        return np.concatenate(list(np.moveaxis(x, 1, 0)), axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        ctx, probs = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                                  self.split_heads(V @ self.W_V))
        out = self.combine_heads(ctx) @ self.W_O
        return (out, probs) if return_weights else out
