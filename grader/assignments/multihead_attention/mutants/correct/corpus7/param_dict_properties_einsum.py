# expect: correct
# Weights live in a dict {'q','k','v','o'} behind W_Q..W_O properties; every contraction is an np.einsum with ellipsis; np.nan_to_num is only a defensive no-op on valid rows.
import numpy as np


def softmax(x):
    """Stable softmax along the last axis (any rank)."""
    x = np.asarray(x)
    peak = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - peak)                 # largest entry of each row is exp(0) = 1
    p = e / np.sum(e, axis=-1, keepdims=True)
    # rows always contain a 1 after the shift, so this never fires on valid input
    return np.nan_to_num(p, nan=0.0)


def scaled_dot_product_attention(Q, K, V):
    """Q (B,H,T,d), K (B,H,S,d), V (B,H,S,d) -> out (B,H,T,d), weights (B,H,T,S)."""
    d_k = Q.shape[-1]
    logits = np.einsum('...qd,...kd->...qk', Q, K) / np.sqrt(d_k)
    weights = softmax(logits)
    out = np.einsum('...qk,...kd->...qd', weights, V)
    return out, weights


class MultiHeadAttention:
    """Four (D, D) matrices stored in ``self.params``; applied as x @ W."""

    _names = {'W_Q': 'q', 'W_K': 'k', 'W_V': 'v', 'W_O': 'o'}

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads={num_heads} does not divide d_model={d_model}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        sd = 1.0 / np.sqrt(d_model)
        self.params = {}
        for key in ('q', 'k', 'v', 'o'):
            self.params[key] = rng.normal(0.0, sd, (d_model, d_model))

    @property
    def W_Q(self):
        return self.params['q']

    @W_Q.setter
    def W_Q(self, value):
        self.params['q'] = np.asarray(value)

    @property
    def W_K(self):
        return self.params['k']

    @W_K.setter
    def W_K(self, value):
        self.params['k'] = np.asarray(value)

    @property
    def W_V(self):
        return self.params['v']

    @W_V.setter
    def W_V(self, value):
        self.params['v'] = np.asarray(value)

    @property
    def W_O(self):
        return self.params['o']

    @W_O.setter
    def W_O(self, value):
        self.params['o'] = np.asarray(value)

    def split_heads(self, x):
        b, t, _ = x.shape
        blocks = x.reshape(b, t, self.num_heads, self.d_k)
        return np.einsum('bthd->bhtd', blocks)

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.einsum('bhtd->bthd', x).reshape(b, t, h * d)

    def _project(self, x, name):
        return np.einsum('...i,ij->...j', x, self.params[name])

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self._project(Q, 'q'))
        k = self.split_heads(self._project(K, 'k'))
        v = self.split_heads(self._project(V, 'v'))
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = self._project(self.combine_heads(ctx), 'o')
        return (out, attn) if return_weights else out
