# expect: attention-wrong-transpose
# scaled_dot_product_attention: "K transposed" is built with reshape(..., d_k, S), which reorders memory instead of swapping the last two axes, so the scores pair queries with scrambled key entries.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=np.float64)
    z = x - x.max(axis=-1, keepdims=True)
    ez = np.exp(z)
    return ez / ez.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    # Step 1: K^T  (B, H, S, d_k) -> (B, H, d_k, S)
    *lead, S, d_k = K.shape
    K_T = K.reshape(*lead, d_k, S)
    # Step 2: similarity of each query with each key
    scores = Q @ K_T
    # Step 3: scale
    scores = scores / np.sqrt(d_k)
    # Step 4: normalise over keys
    weights = softmax(scores)
    # Step 5: weighted sum of the values
    output = weights @ V
    return output, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} not divisible by num_heads={num_heads}")
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
        # Step A: (B, T, D) -> (B, T, H, d_k)
        B, T, D = x.shape
        x = x.reshape(B, T, self.num_heads, self.d_k)
        # Step B: (B, T, H, d_k) -> (B, H, T, d_k)
        return np.transpose(x, (0, 2, 1, 3))

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        x = np.transpose(x, (0, 2, 1, 3))
        return x.reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        attended, weights = scaled_dot_product_attention(q, k, v)
        output = np.matmul(self.combine_heads(attended), self.W_O)
        if return_weights:
            return output, weights
        return output
