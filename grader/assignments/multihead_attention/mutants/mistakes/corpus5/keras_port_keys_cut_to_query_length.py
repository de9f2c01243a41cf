# expect: mha-kv-uses-query-length
# forward: its own head-splitting helper is given seq_len = q.shape[1] for queries, keys and values alike, so keys/values of a different length S are reshaped with the query length T.
import numpy as np


def softmax(x):
    logits = np.asarray(x, dtype=np.float64)
    logits = logits - np.max(logits, axis=-1, keepdims=True)
    e = np.exp(logits)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    matmul_qk = np.matmul(Q, np.swapaxes(K, -1, -2))           # (..., seq_len_q, seq_len_k)
    dk = np.float64(K.shape[-1])
    scaled_attention_logits = matmul_qk / np.sqrt(dk)
    attention_weights = softmax(scaled_attention_logits)       # axis=-1
    output = np.matmul(attention_weights, V)                   # (..., seq_len_q, depth)
    return output, attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = self.depth = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        batch_size = x.shape[0]
        x = x.reshape(batch_size, -1, self.num_heads, self.depth)
        return x.transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        batch_size = x.shape[0]
        x = x.transpose(0, 2, 1, 3)
        return x.reshape(batch_size, -1, self.d_model)

    def _heads(self, x, batch_size, seq_len):
        # explicit sizes instead of -1, easier to debug shape errors
        return x.reshape(batch_size, seq_len, self.num_heads, self.depth).transpose(0, 2, 1, 3)

    def forward(self, Q, K, V, return_weights=False):
        batch_size, seq_len = Q.shape[0], Q.shape[1]

        q = Q @ self.W_Q      # (batch_size, seq_len, d_model)
        k = K @ self.W_K
        v = V @ self.W_V

        q = self._heads(q, batch_size, seq_len)   # (batch_size, num_heads, seq_len_q, depth)
        k = self._heads(k, batch_size, seq_len)
        v = self._heads(v, batch_size, seq_len)

        scaled_attention, attention_weights = scaled_dot_product_attention(q, k, v)
        concat_attention = self.combine_heads(scaled_attention)
        output = concat_attention @ self.W_O
        if return_weights:
            return output, attention_weights
        return output
