# expect: attention-scale-after-softmax
# The softmax runs on the raw logits and only then are the weights divided by sqrt(dk).
import numpy as np


def softmax(x):
    x_max = np.amax(x, axis=-1, keepdims=True)
    exps = np.exp(x - x_max)
    return exps / np.sum(exps, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    matmul_qk = np.matmul(Q, np.swapaxes(K, -1, -2))
    dk = np.float64(K.shape[-1])
    attention_weights = softmax(matmul_qk)
    attention_weights = attention_weights / np.sqrt(dk)
    output = np.matmul(attention_weights, V)
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
        out, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                              self.split_heads(V @ self.W_V))
        out = self.combine_heads(out) @ self.W_O
        return (out, w) if return_weights else out
