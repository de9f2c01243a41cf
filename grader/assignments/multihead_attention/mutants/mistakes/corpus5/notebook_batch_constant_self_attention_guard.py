# expect: split-heads-hardcoded-shape, mha-no-divisibility-check, mha-ignores-key-value
# split_heads: reshapes with the notebook constant BATCH_SIZE = 2 instead of x.shape[0]; __init__: only refuses num_heads > d_model, so e.g. d_model=10, num_heads=4 is accepted; forward: projects the query input for keys and values too, ignoring K and V.
import numpy as np

# cell 1: toy sizes used throughout the notebook
BATCH_SIZE = 2
SEQ_LEN = 5
D_MODEL = 8
NUM_HEADS = 2


# cell 2
def softmax(x):
    x = np.asarray(x, dtype=float)
    e_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e_x / e_x.sum(axis=-1, keepdims=True)


# cell 3
def scaled_dot_product_attention(Q, K, V):
    d_k = K.shape[-1]
    scores = np.matmul(Q, K.transpose(0, 1, 3, 2)) / np.sqrt(d_k)
    attn = softmax(scores)
    return np.matmul(attn, V), attn


# cell 4
class MultiHeadAttention:
    def __init__(self, d_model=D_MODEL, num_heads=NUM_HEADS):
        if num_heads > d_model:
            raise ValueError("more heads than features")
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
        x = x.reshape(BATCH_SIZE, -1, self.num_heads, self.d_k)   # (B, T, H, d_k)
        return x.transpose(0, 2, 1, 3)                            # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)

    def forward(self, Q, K, V, return_weights=False):
        x = Q  # self-attention: queries, keys and values all come from the same sequence
        q = self.split_heads(x @ self.W_Q)
        k = self.split_heads(x @ self.W_K)
        v = self.split_heads(x @ self.W_V)
        out, attn = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(out) @ self.W_O
        if return_weights:
            return out, attn
        return out


# cell 5: quick check
if __name__ == "__main__":
    x = np.random.randn(BATCH_SIZE, SEQ_LEN, D_MODEL)
    mha = MultiHeadAttention()
    y, w = mha.forward(x, x, x, return_weights=True)
    print(y.shape, w.shape, w.sum(-1))
