# expect: mha-wrong-projection
# A PyTorch port keeps nn.Linear's convention, y = x @ W.T, for all four
# matrices, while this layer applies them as x @ W.
import numpy as np


def softmax(x, dim=-1):
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def linear(x, weight):
    return x @ weight.T


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ K.swapaxes(-2, -1) / np.sqrt(Q.shape[-1])
    p = softmax(scores, dim=-1)
    return p @ V, p


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.num_heads, self.head_dim = num_heads, d_model // num_heads

    def split_heads(self, x):
        bsz, tgt_len, _ = x.shape
        return x.reshape(bsz, tgt_len, self.num_heads, self.head_dim).swapaxes(1, 2)

    def combine_heads(self, x):
        bsz, _, tgt_len, _ = x.shape
        return x.swapaxes(1, 2).reshape(bsz, tgt_len, -1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(linear(Q, self.W_Q))
        k = self.split_heads(linear(K, self.W_K))
        v = self.split_heads(linear(V, self.W_V))
        attn_output, attn_weights = scaled_dot_product_attention(q, k, v)
        attn_output = linear(self.combine_heads(attn_output), self.W_O)
        return (attn_output, attn_weights) if return_weights else attn_output
