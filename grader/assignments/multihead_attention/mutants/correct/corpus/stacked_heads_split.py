# expect: correct
# Heads cut with np.split along the features and stacked on a new axis 1; put
# back together with np.concatenate. Softmax through a log-sum-exp.
import numpy as np


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
    return np.exp(x - lse)


def scaled_dot_product_attention(Q, K, V):
    scale = Q.shape[-1] ** -0.5
    logits = np.einsum("...qd,...kd->...qk", Q * scale, K)
    probs = softmax(logits)
    return np.einsum("...qk,...kd->...qd", probs, V), probs


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"{num_heads} heads cannot share {d_model} features")
        self.num_heads = num_heads

    def split_heads(self, x):
        return np.stack(np.split(x, self.num_heads, axis=-1), axis=1)

    def combine_heads(self, x):
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        heads = [self.split_heads(x @ w) for x, w in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V))]
        context, probs = scaled_dot_product_attention(*heads)
        out = self.combine_heads(context) @ self.W_O
        return (out, probs) if return_weights else out
