# expect: attention-causal-mask, mha-adds-residual
# scaled_dot_product_attention: sets the scores of every key after the query's position to -inf (a decoder's causal mask) before the softmax; forward: returns the output plus the query input (a residual connection that belongs to the block).
import numpy as np


def softmax(x):
    x = np.asarray(x)
    x_max = np.max(x, axis=-1, keepdims=True)
    unnormalized = np.exp(x - x_max)
    return unnormalized / np.sum(unnormalized, axis=-1, keepdims=True)


def _causal(T, S):
    # True where a query would look ahead
    return np.triu(np.ones((T, S), dtype=bool), k=1)


def scaled_dot_product_attention(Q, K, V):
    T, d_k = Q.shape[-2:]
    S = K.shape[-2]
    att = (Q @ np.swapaxes(K, -2, -1)) * (1.0 / np.sqrt(d_k))
    att = np.where(_causal(T, S), -np.inf, att)
    att = softmax(att)
    return att @ V, att


def linear(params, name, x):
    return x @ params[name]


def split(x, n_head):
    B, T, C = x.shape
    return x.reshape(B, T, n_head, C // n_head).transpose(0, 2, 1, 3)


def merge(x):
    B, nh, T, hs = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, nh * hs)


def mha(params, n_head, q, k, v, split_fn=split, merge_fn=merge):
    qh = split_fn(linear(params, "W_Q", q))
    kh = split_fn(linear(params, "W_K", k))
    vh = split_fn(linear(params, "W_V", v))
    y, att = scaled_dot_product_attention(qh, kh, vh)
    y = linear(params, "W_O", merge_fn(y))
    return q + y, att


class MultiHeadAttention:
    """Thin object wrapper around the pure functions above."""

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("n_embd % n_head != 0")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    @property
    def params(self):
        return {"W_Q": self.W_Q, "W_K": self.W_K, "W_V": self.W_V, "W_O": self.W_O}

    def split_heads(self, x):
        return split(x, self.num_heads)

    def combine_heads(self, x):
        return merge(x)

    def forward(self, Q, K, V, return_weights=False):
        out, att = mha(self.params, self.num_heads, Q, K, V,
                       split_fn=self.split_heads, merge_fn=self.combine_heads)
        if return_weights:
            return out, att
        return out
