# expect: mha-adds-residual
# Head objects per head, and a skip connection written with np.add(..., out=).
import numpy as np

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return w @ V, w


class Head:
    def __init__(self, i, d_k):
        self.cols = slice(i * d_k, (i + 1) * d_k)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_K = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_V = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_O = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))

        self.heads = [Head(i, self.d_k) for i in range(num_heads)]

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        outs, ws = [], []
        for head in self.heads:
            o, w = scaled_dot_product_attention(Q @ self.W_Q[:, head.cols], K @ self.W_K[:, head.cols],
                                                V @ self.W_V[:, head.cols])
            outs.append(o)
            ws.append(w)
        out = np.concatenate(outs, axis=-1) @ self.W_O
        np.add(out, Q, out=out)
        w = np.stack(ws, axis=1)
        return (out, w) if return_weights else out
