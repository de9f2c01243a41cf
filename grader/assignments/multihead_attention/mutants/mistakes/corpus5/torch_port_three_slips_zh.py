# expect: attention-returns-scores, split-heads-wrong-axes, mha-no-output-projection
# attention hands back the scaled scores (before softmax) as the weights; split_heads permutes (B, T, H, d_k) with (0, 2, 3, 1), giving (B, H, d_k, T); forward returns the merged heads without multiplying by W_O
"""PyTorch 代码移植到 NumPy 的多头注意力。

用 ``view`` / ``permute`` / ``transpose`` 三个小函数模拟 torch 的张量方法，
正文尽量和原来的 PyTorch 代码保持一致。
"""

import numpy as np


def view(t, *shape):
    return t.reshape(shape)


def permute(t, *dims):
    return t.transpose(dims)


def transpose(t, a, b):
    return np.swapaxes(t, a, b)


def softmax(x):
    # 减去每一行的最大值，保证数值稳定
    x = np.asarray(x)
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ transpose(K, -2, -1) / np.sqrt(d_k)   # (..., T, S)
    p_attn = softmax(scores)
    # 和 torch 版本一样返回 (输出, 注意力)
    return p_attn @ V, scores


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model 不能被 num_heads 整除")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        nbatches, seq = x.shape[0], x.shape[1]
        # (B, T, D) -> (B, T, H, d_k) -> 把头放到第二维
        return permute(view(x, nbatches, seq, self.num_heads, self.d_k), 0, 2, 3, 1)

    def combine_heads(self, x):
        nbatches, h, seq, d = x.shape
        return view(permute(x, 0, 2, 1, 3), nbatches, seq, h * d)

    def forward(self, Q, K, V, return_weights=False):
        query = self.split_heads(Q @ self.W_Q)
        key = self.split_heads(K @ self.W_K)
        value = self.split_heads(V @ self.W_V)
        x, attn = scaled_dot_product_attention(query, key, value)
        # 把各个头拼回 (B, T, D)
        x = self.combine_heads(x)
        if return_weights:
            return x, attn
        return x
