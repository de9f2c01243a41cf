# expect: correct
# Row softmax through np.apply_along_axis, heads moved with np.moveaxis on negative axes, and forward recursing over the batch one entry at a time.
import numpy as np


def _row_softmax(row):
    # one 1-D row; float64 copy so ints and float32 behave the same
    row = np.array(row, dtype=np.float64)
    row = row - row.max()          # biggest exponent becomes exp(0) = 1
    e = np.exp(row)                # -inf -> 0
    return e / e.sum()


def softmax(x):
    x = np.asarray(x)
    return np.apply_along_axis(_row_softmax, -1, x)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    K_t = np.moveaxis(K, -1, -2)                    # (B, H, d_k, S)
    scores = np.matmul(Q, K_t) / np.sqrt(d_k)       # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        d_k, rest = divmod(d_model, num_heads)
        if rest:
            raise ValueError("num_heads (%d) must divide d_model (%d)" % (num_heads, d_model))
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_k
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        # (B, T, D) -> (B, T, H, d_k) -> (B, H, T, d_k)
        x = x.reshape(x.shape[:-1] + (self.num_heads, self.d_k))
        return np.moveaxis(x, -2, -3)

    def combine_heads(self, x):
        # (B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, D)
        x = np.moveaxis(x, -3, -2)
        return x.reshape(x.shape[:-2] + (-1,))

    def forward(self, Q, K, V, return_weights=False):
        if Q.shape[0] > 1:
            # one batch entry now, the rest by recursion, then glue back together
            first_out, first_w = self.forward(Q[:1], K[:1], V[:1], return_weights=True)
            rest_out, rest_w = self.forward(Q[1:], K[1:], V[1:], return_weights=True)
            out = np.concatenate([first_out, rest_out], axis=0)
            weights = np.concatenate([first_w, rest_w], axis=0)
        else:
            q = self.split_heads(Q @ self.W_Q)
            k = self.split_heads(K @ self.W_K)
            v = self.split_heads(V @ self.W_V)
            heads, weights = scaled_dot_product_attention(q, k, v)
            out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
