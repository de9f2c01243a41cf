# expect: mha-adds-residual, mha-adds-layer-norm
# A post-norm block inside the layer: LayerNorm(Q + attention), the variance
# with an epsilon of 1e-12 as BERT's code has it.
import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ K.transpose(0, 1, 3, 2) / np.sqrt(Q.shape[-1]))
    return w @ V, w


def _layer_norm(x, eps=1e-12):
    u = x.mean(-1, keepdims=True)
    s = ((x - u) ** 2).mean(-1, keepdims=True)
    return (x - u) / np.sqrt(s + eps)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("hidden size is not a multiple of the number of attention heads")
        self.num_attention_heads = num_heads
        self.attention_head_size = d_model // num_heads

    def split_heads(self, x):
        new_shape = x.shape[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.reshape(new_shape).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        x = x.transpose(0, 2, 1, 3)
        return x.reshape(x.shape[:-2] + (-1,))

    def forward(self, Q, K, V, return_weights=False):
        context, probs = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                                      self.split_heads(V @ self.W_V))
        hidden = self.combine_heads(context) @ self.W_O
        out = _layer_norm(hidden + Q)
        return (out, probs) if return_weights else out
