# expect: softmax-no-keepdims, attention-scale-after-softmax
# softmax: the row sum is taken without keepdims, so it broadcasts against the wrong axis (wrong or a shape error for 2-D+ inputs); scaled_dot_product_attention: the 1/sqrt(d_k) factor multiplies the softmax output instead of the scores.
import numpy as np


def softmax(x):
    blob = np.asarray(x, dtype=np.float64)
    tip = blob.max(axis=-1)
    pow_ = np.exp(blob - tip[..., np.newaxis])
    tot = pow_.sum(axis=-1)
    return pow_ / tot


def scaled_dot_product_attention(Q, K, V):
    dd = Q.shape[-1]
    raw = Q @ np.swapaxes(K, -1, -2)                    # B H T S
    alpha = softmax(raw) * (1.0 / np.sqrt(dd))          # temperature 1/sqrt(d_k)
    mix = alpha @ V                                     # B H T d_k
    return mix, alpha


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        q, r = divmod(d_model, num_heads)
        if r:
            raise ValueError(f"leftover {r} features: d_model={d_model}, num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = q
        gen = np.random.default_rng(0)
        sig = 1.0 / np.sqrt(d_model)
        self.W_Q = gen.normal(0.0, sig, (d_model, d_model))
        self.W_K = gen.normal(0.0, sig, (d_model, d_model))
        self.W_V = gen.normal(0.0, sig, (d_model, d_model))
        self.W_O = gen.normal(0.0, sig, (d_model, d_model))

    def split_heads(self, x):
        nb, nt, _ = x.shape
        return x.reshape(nb, nt, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        nb, nh, nt, dd = x.shape
        return x.transpose(0, 2, 1, 3).reshape(nb, nt, nh * dd)

    @staticmethod
    def _lin(stuff, mat):
        # contract the feature axis of stuff with the rows of mat
        return np.tensordot(stuff, mat, axes=([-1], [0]))

    def forward(self, Q, K, V, return_weights=False):
        qq = self.split_heads(self._lin(Q, self.W_Q))
        kk = self.split_heads(self._lin(K, self.W_K))
        vv = self.split_heads(self._lin(V, self.W_V))
        mix, alpha = scaled_dot_product_attention(qq, kk, vv)
        res = self._lin(self.combine_heads(mix), self.W_O)
        return (res, alpha) if return_weights else res
