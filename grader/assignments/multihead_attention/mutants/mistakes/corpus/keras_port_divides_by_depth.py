# expect: attention-wrong-scale
# Divides the logits by the depth itself instead of its square root.
import numpy as np


def softmax(x):
    exps = np.exp(x - np.amax(x, axis=-1, keepdims=True))
    return exps / np.sum(exps, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    matmul_qk = np.matmul(Q, np.transpose(K, axes=[0, 1, 3, 2]))
    dk = np.float64(K.shape[-1])
    scaled_attention_logits = matmul_qk / dk
    attention_weights = softmax(scaled_attention_logits)
    return np.matmul(attention_weights, V), attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.num_heads, self.d_model = num_heads, d_model
        self.depth = d_model // num_heads

    def split_heads(self, x):
        x = np.reshape(x, (x.shape[0], -1, self.num_heads, self.depth))
        return np.transpose(x, axes=[0, 2, 1, 3])

    def combine_heads(self, x):
        x = np.transpose(x, axes=[0, 2, 1, 3])
        return np.reshape(x, (x.shape[0], -1, self.d_model))

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.dot(Q, self.W_Q))
        k = self.split_heads(np.dot(K, self.W_K))
        v = self.split_heads(np.dot(V, self.W_V))
        out, w = scaled_dot_product_attention(q, k, v)
        out = np.dot(self.combine_heads(out), self.W_O)
        return (out, w) if return_weights else out
