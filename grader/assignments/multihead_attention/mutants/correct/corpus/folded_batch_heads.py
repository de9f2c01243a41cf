# expect: correct
# A textbook layout: batch and heads folded into one leading axis for the
# attention (B * H, T, d_k), unfolded again for the weights that forward returns.
import numpy as np


def softmax(X):
    X_exp = np.exp(X - X.max(-1, keepdims=True))
    partition = X_exp.sum(-1, keepdims=True)
    return X_exp / partition  # broadcasting along the last axis


def scaled_dot_product_attention(Q, K, V):
    d = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)
    attention_weights = softmax(scores)
    return attention_weights @ V, attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_hiddens must be divisible by num_heads")
        self.num_heads = num_heads
        self.num_hiddens = d_model

    def split_heads(self, X):
        # (batch, seq, hiddens) -> (batch, seq, heads, hiddens / heads) -> (batch, heads, seq, hiddens / heads)
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        return X.transpose(0, 2, 1, 3)

    def combine_heads(self, X):
        X = X.transpose(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)

    def transpose_qkv(self, X):
        X = self.split_heads(X)
        return X.reshape(-1, X.shape[2], X.shape[3])  # (B * H, T, d_k)

    def transpose_output(self, X, batch):
        X = X.reshape(batch, self.num_heads, X.shape[1], X.shape[2])  # (B, H, T, d_k)
        return self.combine_heads(X)

    def forward(self, Q, K, V, return_weights=False):
        batch = Q.shape[0]
        queries = self.transpose_qkv(Q @ self.W_Q)
        keys = self.transpose_qkv(K @ self.W_K)
        values = self.transpose_qkv(V @ self.W_V)
        output, weights = scaled_dot_product_attention(queries, keys, values)
        output_concat = self.transpose_output(output, batch)
        out = output_concat @ self.W_O
        if return_weights:
            return out, weights.reshape(batch, self.num_heads, weights.shape[1], weights.shape[2])
        return out
