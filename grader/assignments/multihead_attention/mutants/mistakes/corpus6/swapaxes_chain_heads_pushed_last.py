# expect: combine-heads-wrong-order, mha-wrong-weights-returned
# combine_heads does one swapaxes too many, moving the head axis behind the features before the reshape; forward swaps the returned weights to (B, T, H, S) to line them up with the output.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    z = x - x.max(axis=-1, keepdims=True)
    ez = np.exp(z)
    return ez / ez.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    kt = K.swapaxes(-1, -2)                      # (B, H, d_k, S)
    w = softmax((Q @ kt) / np.sqrt(Q.shape[-1]))  # (B, H, T, S)
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} features do not split into {num_heads} heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        # (B, T, D) -> (B, T, H, d_k) -> (B, H, T, d_k)
        return x.reshape(x.shape[0], x.shape[1], self.num_heads, self.d_k).swapaxes(1, 2)

    def combine_heads(self, x):
        # (B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, d_k, H) -> (B, T, D)
        B, H, T, d_k = x.shape
        return x.swapaxes(1, 2).swapaxes(2, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O     # (B, T, D)
        if return_weights:
            return out, w.swapaxes(1, 2)            # (B, T, H, S), batch-then-query like out
        return out
