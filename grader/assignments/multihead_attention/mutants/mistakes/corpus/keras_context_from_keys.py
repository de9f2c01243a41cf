# expect: attention-wrong-value-product
# The context is the weights times the keys: matmul(attention_weights, k).
import numpy as np


def softmax(x):
    exps = np.exp(x - np.amax(x, axis=-1, keepdims=True))
    return exps / np.sum(exps, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    matmul_qk = np.matmul(Q, np.transpose(K, axes=[0, 1, 3, 2]))
    attention_weights = softmax(matmul_qk / np.sqrt(np.float64(K.shape[-1])))
    output = np.matmul(attention_weights, K)
    return output, attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.num_heads, self.depth = num_heads, d_model // num_heads

    def split_heads(self, x):
        return np.transpose(np.reshape(x, (x.shape[0], -1, self.num_heads, self.depth)), axes=[0, 2, 1, 3])

    def combine_heads(self, x):
        x = np.transpose(x, axes=[0, 2, 1, 3])
        return np.reshape(x, (x.shape[0], x.shape[1], -1))

    def forward(self, Q, K, V, return_weights=False):
        out, w = scaled_dot_product_attention(self.split_heads(np.dot(Q, self.W_Q)), self.split_heads(np.dot(K, self.W_K)),
                                              self.split_heads(np.dot(V, self.W_V)))
        out = np.dot(self.combine_heads(out), self.W_O)
        return (out, w) if return_weights else out
