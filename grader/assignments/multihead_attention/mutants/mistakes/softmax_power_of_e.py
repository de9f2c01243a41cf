# expect: softmax-unstable
# e ** x instead of np.exp, with no shift: overflows for large logits.
import numpy as np
def softmax(x):
    e = 2.718281828459045 ** x
    return e / np.sum(e, axis=-1, keepdims=True)
def scaled_dot_product_attention(Q, K, V):
    d = Q.shape[-1]
    s = np.einsum("bhqd,bhkd->bhqk", Q, K) / np.sqrt(d)
    w = softmax(s)
    return np.einsum("bhqk,bhkd->bhqd", w, V), w
class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("heads")
        self.H, self.D = num_heads, d_model
    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape(B, T, self.H, D // self.H).transpose(0, 2, 1, 3)
    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)
    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        o, w = scaled_dot_product_attention(q, k, v)
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
