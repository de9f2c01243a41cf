# expect: softmax-global-max, attention-mutates-input, mha-mutates-input
# softmax: subtracts the single largest value of the whole array rather than each row's max, so rows far below it underflow to 0/0; scaled_dot_product_attention: divides Q by sqrt(d_k) in place, changing the caller's array; forward: writes the projections into Q, K and V with matmul(out=...), overwriting the inputs.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max())          # shift for stability
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    # scale the queries rather than the (T, S) score matrix: fewer multiplications
    Q /= np.sqrt(d_k)
    scores = np.matmul(Q, np.swapaxes(K, -1, -2))
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
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
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        # (B, L, D) @ (D, D) keeps the shape, so the results can go straight into the
        # input buffers instead of allocating three new arrays
        np.matmul(Q, self.W_Q, out=Q)
        np.matmul(K, self.W_K, out=K)
        np.matmul(V, self.W_V, out=V)
        heads, weights = scaled_dot_product_attention(
            self.split_heads(Q), self.split_heads(K), self.split_heads(V))
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
