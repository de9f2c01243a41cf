# expect: mha-wrong-weights-returned
# The folded layout (B * H, T, d_k) for the attention, and the weights handed
# back still folded: (B * H, T, S) instead of (B, H, T, S).
import numpy as np


def softmax(X):
    X_exp = np.exp(X - X.max(-1, keepdims=True))
    return X_exp / X_exp.sum(-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_hiddens must be divisible by num_heads")
        self.num_heads = num_heads

    def split_heads(self, X):
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        return X.transpose(0, 2, 1, 3)

    def combine_heads(self, X):
        X = X.transpose(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)

    def forward(self, Q, K, V, return_weights=False):
        B = Q.shape[0]
        fold = lambda X: (lambda Y: Y.reshape(-1, Y.shape[2], Y.shape[3]))(self.split_heads(X))  # (B * H, L, d_k)
        out, weights = scaled_dot_product_attention(fold(Q @ self.W_Q), fold(K @ self.W_K), fold(V @ self.W_V))
        out = self.combine_heads(out.reshape(B, self.num_heads, out.shape[1], out.shape[2])) @ self.W_O
        return (out, weights) if return_weights else out
