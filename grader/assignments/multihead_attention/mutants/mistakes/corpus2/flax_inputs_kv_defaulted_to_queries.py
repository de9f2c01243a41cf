# expect: mha-ignores-key-value
# Flax's inputs_q / inputs_kv signature ported: the key-value input is taken
# from the queries, as in self-attention, whatever K and V are.
import numpy as np

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_K = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_V = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_O = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)

    def __call__(self, inputs_q, inputs_kv=None):
        inputs_kv = inputs_q if inputs_kv is None else inputs_kv
        q = self.split_heads(inputs_q @ self.W_Q)
        k = self.split_heads(inputs_kv @ self.W_K)
        v = self.split_heads(inputs_kv @ self.W_V)
        ctx, w = scaled_dot_product_attention(q, k, v)
        return self.combine_heads(ctx) @ self.W_O, w

    def forward(self, Q, K, V, return_weights=False):
        out, w = self(Q)
        return (out, w) if return_weights else out
