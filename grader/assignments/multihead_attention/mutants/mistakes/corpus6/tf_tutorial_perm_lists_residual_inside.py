# expect: attention-wrong-transpose, mha-adds-residual
# In scaled_dot_product_attention the keys get the perm [0, 2, 3, 1] (meant for an unsplit (batch, seq, heads, depth) array) instead of [0, 1, 3, 2]; forward adds the query input back onto its output (the encoder layer's residual).
"""Port of the TensorFlow "Transformer model for language understanding" tutorial.

tf.transpose(x, perm=p) -> np.transpose(x, p)
tf.matmul(a, b)         -> np.matmul(a, b)
tf.nn.softmax(x, -1)    -> softmax(x)
tf.reshape(x, shape)    -> np.reshape(x, shape)
"""
import numpy as np


def softmax(x):
    # tf.nn.softmax(logits, axis=-1)
    logits = np.asarray(x, dtype=np.float64)
    logits = logits - np.max(logits, axis=-1, keepdims=True)
    e = np.exp(logits)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(q, k, v):
    # matmul_qk = tf.matmul(q, k, transpose_b=True)
    # (batch, seq_len_k, num_heads, depth) -> (batch, num_heads, depth, seq_len_k)
    k_t = np.transpose(k, [0, 2, 3, 1])
    matmul_qk = np.matmul(q, k_t)
    # dk = tf.cast(tf.shape(k)[-1], tf.float32)
    dk = np.float64(np.shape(k)[-1])
    scaled_attention_logits = matmul_qk / np.sqrt(dk)
    attention_weights = softmax(scaled_attention_logits)
    output = np.matmul(attention_weights, v)
    return output, attention_weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.num_heads = num_heads
        self.d_model = d_model
        # assert d_model % self.num_heads == 0
        if d_model % self.num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.depth = d_model // self.num_heads
        self.d_k = self.depth
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))  # self.wq = Dense(d_model)
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))  # self.wk
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))  # self.wv
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))  # self.dense

    def split_heads(self, x, batch_size=None):
        """Split the last dimension into (num_heads, depth).
        Transpose the result such that the shape is (batch_size, num_heads, seq_len, depth)
        """
        if batch_size is None:
            batch_size = np.shape(x)[0]
        x = np.reshape(x, (batch_size, -1, self.num_heads, self.depth))
        return np.transpose(x, [0, 2, 1, 3])

    def combine_heads(self, x):
        batch_size = np.shape(x)[0]
        scaled_attention = np.transpose(x, [0, 2, 1, 3])  # (batch, seq_len_q, num_heads, depth)
        return np.reshape(scaled_attention, (batch_size, -1, self.d_model))

    def forward(self, Q, K, V, return_weights=False):
        q = np.matmul(Q, self.W_Q)  # (batch_size, seq_len, d_model)
        k = np.matmul(K, self.W_K)
        v = np.matmul(V, self.W_V)

        q = self.split_heads(q)  # (batch_size, num_heads, seq_len_q, depth)
        k = self.split_heads(k)  # (batch_size, num_heads, seq_len_k, depth)
        v = self.split_heads(v)  # (batch_size, num_heads, seq_len_v, depth)

        scaled_attention, attention_weights = scaled_dot_product_attention(q, k, v)
        concat_attention = self.combine_heads(scaled_attention)
        attn_output = np.matmul(concat_attention, self.W_O)  # (batch_size, seq_len_q, d_model)
        # out1 = self.layernorm1(x + attn_output)
        output = Q + attn_output
        if return_weights:
            return output, attention_weights
        return output
