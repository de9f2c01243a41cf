# expect: split-heads-hardcoded-shape
# float32, reshapes to (2, -1, H, d_k): the batch size is a constant.
import numpy as np


def softmax(x):
    x32 = np.asarray(x, dtype=np.float32)
    top = np.max(x32, axis=-1, keepdims=True)
    log_norm = top + np.log(np.sum(np.exp(x32 - top), axis=-1, keepdims=True))
    return np.exp(x32 - log_norm)


def scaled_dot_product_attention(Q, K, V):
    *lead, T, d = Q.shape
    S = K.shape[-2]
    q = Q.reshape(-1, T, d).astype(np.float32)
    k = K.reshape(-1, S, d).astype(np.float32)
    v = V.reshape(-1, S, V.shape[-1]).astype(np.float32)
    scores = np.einsum("ntd,nsd->nts", q, k) / np.float32(np.sqrt(d))
    weights = softmax(scores)
    out = np.einsum("nts,nsd->ntd", weights, v)
    return out.reshape(*lead, T, V.shape[-1]), weights.reshape(*lead, T, S)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if num_heads <= 0 or d_model % num_heads:
            raise ValueError("bad head count")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

    def split_heads(self, x):
        n, t, _ = x.shape
        return np.ascontiguousarray(x.reshape(2, -1, self.num_heads, self.d_k).swapaxes(1, 2))

    def combine_heads(self, x):
        n, h, t, d = x.shape
        return x.swapaxes(1, 2).reshape(n, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
        q = self.split_heads(f32(Q) @ f32(self.W_Q))
        k = self.split_heads(f32(K) @ f32(self.W_K))
        v = self.split_heads(f32(V) @ f32(self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ f32(self.W_O)
        if return_weights:
            return out, weights
        return out
