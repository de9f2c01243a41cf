# expect: combine-heads-no-transpose
# The folded layout's inverse reshapes (B, H, T, d_k) straight to (B, T, D),
# forgetting to move the head axis back behind the sequence axis.
import numpy as np


def softmax(X):
    X_exp = np.exp(X - X.max(-1, keepdims=True))
    return X_exp / X_exp.sum(-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = softmax(scores)
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
        return X.reshape(X.shape[0], X.shape[2], -1)

    def forward(self, Q, K, V, return_weights=False):
        queries = self.split_heads(Q @ self.W_Q)
        keys = self.split_heads(K @ self.W_K)
        values = self.split_heads(V @ self.W_V)
        output, weights = scaled_dot_product_attention(queries, keys, values)
        out = self.combine_heads(output) @ self.W_O
        return (out, weights) if return_weights else out
