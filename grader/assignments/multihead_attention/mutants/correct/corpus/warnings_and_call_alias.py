# expect: correct
# A layer object in a framework's manner: __call__ forwards to forward, a
# ValueError raised from a helper, shapes checked with asserts on the way.
import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    assert Q.shape[-1] == K.shape[-1] and K.shape[-2] == V.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    attn = softmax(scores)
    return attn @ V, attn


def _check_heads(d_model, num_heads):
    if num_heads < 1 or d_model % num_heads:
        raise ValueError(f"num_heads={num_heads} must divide d_model={d_model}")
    return d_model // num_heads


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.head_size = _check_heads(d_model, num_heads)
        self.num_heads = num_heads

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.head_size).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, s = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * s)

    def forward(self, Q, K, V, return_weights=False):
        heads = [self.split_heads(x @ W) for x, W in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V))]
        ctx, attn = scaled_dot_product_attention(*heads)
        out = self.combine_heads(ctx) @ self.W_O
        assert out.shape == Q.shape
        return (out, attn) if return_weights else out
