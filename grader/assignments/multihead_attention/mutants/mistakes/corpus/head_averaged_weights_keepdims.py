# expect: mha-wrong-weights-returned
# Returns the weights averaged over the heads, as a framework's default does,
# kept as a size-1 head axis: (B, 1, T, S).
import numpy as np


def softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return np.exp(shifted) / np.sum(np.exp(shifted), axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    logits = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    attn = softmax(logits)
    return attn @ V, attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if num_heads <= 0 or d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.num_heads = num_heads

    def split_heads(self, x):
        batch, length, width = x.shape
        return np.swapaxes(x.reshape(batch, length, self.num_heads, width // self.num_heads), 1, 2)

    def combine_heads(self, x):
        batch, n_heads, length, d_head = x.shape
        return np.swapaxes(x, 1, 2).reshape(batch, length, n_heads * d_head)

    def forward(self, Q, K, V, return_weights=False):
        ctx, attn = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                                 self.split_heads(V @ self.W_V))
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, np.mean(attn, axis=1, keepdims=True)
        return out
