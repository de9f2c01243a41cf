# expect: mha-adds-layer-norm
# A layer norm without parameters applied to the output, spelled with np.std
# and a 1e-6 epsilon.
import numpy as np


def softmax(x):
    c = np.max(x, axis=-1, keepdims=True)
    exp_x = np.exp(x - c)
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    attn = np.matmul(Q, K.transpose(0, 1, 3, 2)) / np.sqrt(Q.shape[-1])
    attn = softmax(attn)
    return np.matmul(attn, V), attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.n_head, self.head_dim = num_heads, d_model // num_heads

    def split_heads(self, x):
        N, S, E = x.shape
        return x.reshape(N, S, self.n_head, self.head_dim).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        N, H, S, hd = x.shape
        return x.transpose(0, 2, 1, 3).reshape(N, S, H * hd)

    def forward(self, Q, K, V, return_weights=False):
        y, attn = scaled_dot_product_attention(self.split_heads(np.matmul(Q, self.W_Q)),
                                               self.split_heads(np.matmul(K, self.W_K)),
                                               self.split_heads(np.matmul(V, self.W_V)))
        output = np.matmul(self.combine_heads(y), self.W_O)
        output = (output - output.mean(axis=-1, keepdims=True)) / (output.std(axis=-1, keepdims=True) + 1e-6)
        return (output, attn) if return_weights else output
