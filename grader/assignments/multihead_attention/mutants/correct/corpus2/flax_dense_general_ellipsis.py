# expect: correct
# Written the way a Flax MultiHeadDotProductAttention reads: DenseGeneral-style
# projections whose kernels are viewed as (D, H, d_k), and einsum with ellipsis.
import numpy as np


def softmax(x):
    x = np.asarray(x)
    m = np.max(x, axis=-1, keepdims=True)
    unnormalized = np.exp(x - m)
    return unnormalized / np.sum(unnormalized, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    depth = Q.shape[-1]
    query = Q / np.sqrt(depth).astype(Q.dtype)
    attn_weights = np.einsum("...qd,...kd->...qk", query, K)
    attn_weights = softmax(attn_weights)
    return np.einsum("...qk,...kd->...qd", attn_weights, V), attn_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not a multiple of num_heads={num_heads}")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q, self.W_K, self.W_V, self.W_O = (rng.normal(0, d_model ** -0.5, (d_model, d_model)) for _ in range(4))

    def split_heads(self, x):
        *lead, features = x.shape
        return np.swapaxes(x.reshape(*lead, self.num_heads, features // self.num_heads), -2, -3)

    def combine_heads(self, x):
        x = np.swapaxes(x, -2, -3)  # (B, T, H, d_k)
        return x.reshape(*x.shape[:-2], -1)

    def _dense_general(self, inputs, kernel):
        kernel = kernel.reshape(kernel.shape[0], self.num_heads, self.d_k)  # (D, H, d_k)
        return np.einsum("...td,dhk->...htk", inputs, kernel)

    def forward(self, Q, K, V, return_weights=False):
        query = self._dense_general(Q, self.W_Q)
        key = self._dense_general(K, self.W_K)
        value = self._dense_general(V, self.W_V)
        x, weights = scaled_dot_product_attention(query, key, value)
        out = np.einsum("...htk,hkd->...td", x, self.W_O.reshape(self.num_heads, self.d_k, -1))
        return (out, weights) if return_weights else out
