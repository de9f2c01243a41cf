# expect: correct
# The softmax as exp(x - logsumexp(x)) with SciPy's logsumexp, the heads split
# by a reshape to (B, T, H, -1) and np.transpose with an axes tuple.
import numpy as np
from scipy.special import logsumexp


def softmax(x):
    return np.exp(x - logsumexp(x, axis=-1, keepdims=True))


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    logits = np.matmul(Q, np.transpose(K, (0, 1, 3, 2))) / np.sqrt(d_k)
    attn = softmax(logits)
    return np.matmul(attn, V), attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads

    def split_heads(self, x):
        batch, seq, _ = x.shape
        return np.transpose(x.reshape(batch, seq, self.num_heads, -1), (0, 2, 1, 3))

    def combine_heads(self, x):
        batch, _, seq, _ = x.shape
        return np.transpose(x, (0, 2, 1, 3)).reshape(batch, seq, -1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(ctx), self.W_O)
        if return_weights:
            return out, attn
        return out
