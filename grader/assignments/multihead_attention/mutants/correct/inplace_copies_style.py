# expect: correct
# In-place arithmetic (out=, -=, /=) on fresh copies only; np.copyto into preallocated arrays.
import numpy as np


def softmax(x):
    work = np.array(x, dtype=np.float64)  # a copy: the caller's array stays as it was
    np.subtract(work, work.max(axis=-1, keepdims=True), out=work)
    np.exp(work, out=work)
    work /= work.sum(axis=-1, keepdims=True)
    return work


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, np.swapaxes(K, -1, -2))
    scores /= np.sqrt(Q.shape[-1])
    weights = softmax(scores)
    out = np.empty(Q.shape[:-1] + (V.shape[-1],))
    np.copyto(out, weights @ V)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("uneven split of d_model")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.W_Q = np.zeros((d_model, d_model))
        self.W_K = np.zeros((d_model, d_model))
        self.W_V = np.zeros((d_model, d_model))
        self.W_O = np.zeros((d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        out = np.empty((B, self.num_heads, T, self.d_k))
        for h in range(self.num_heads):
            out[:, h] = x[:, :, h * self.d_k:(h + 1) * self.d_k]
        return out

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        out = np.empty((B, T, H * d_k))
        for h in range(H):
            out[:, :, h * d_k:(h + 1) * d_k] = x[:, h]
        return out

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads)
        out = out @ self.W_O
        if return_weights:
            return out, weights
        return out
