# expect: softmax-no-keepdims, attention-wrong-scale
# softmax takes the row max and row sum without keepdims (breaks broadcasting for most shapes, wrong on square ones); attention divides the scores by sqrt(H * d_k), the model width, instead of sqrt(d_k).
import numpy as np


def softmax(x):
    x = np.asarray(x)
    mx = np.max(x, axis=-1)
    ex = np.exp(x - mx)
    return ex / np.sum(ex, axis=-1)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, dk = Q.shape
    S = K.shape[2]
    d_model = H * dk
    q = Q.reshape(B * H, T, dk)
    k = K.reshape(B * H, S, dk)
    v = V.reshape(B * H, S, dk)
    scores = np.zeros((B * H, T, S))
    for i in range(B * H):
        scores[i] = np.dot(q[i], k[i].T)
    scores = scores / np.sqrt(d_model)
    weights = softmax(scores.reshape(B, H, T, S))
    w = weights.reshape(B * H, T, S)
    out = np.zeros((B * H, T, dk))
    for i in range(B * H):
        out[i] = np.dot(w[i], v[i])
    return out.reshape(B, H, T, dk), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
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
        B, T, D = x.shape
        x = x.reshape(B, T, self.num_heads, self.d_k)
        return np.transpose(x, (0, 2, 1, 3))

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        x = np.transpose(x, (0, 2, 1, 3))
        return x.reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        B, T, D = Q.shape
        S = K.shape[1]
        q = np.dot(Q.reshape(B * T, D), self.W_Q).reshape(B, T, D)
        k = np.dot(K.reshape(B * S, D), self.W_K).reshape(B, S, D)
        v = np.dot(V.reshape(B * S, D), self.W_V).reshape(B, S, D)
        heads, weights = scaled_dot_product_attention(
            self.split_heads(q), self.split_heads(k), self.split_heads(v)
        )
        concat = self.combine_heads(heads)
        out = np.dot(concat.reshape(B * T, D), self.W_O).reshape(B, T, D)
        if return_weights:
            return out, weights
        return out
