# expect: correct
# correct; a PyTorch port with little view/permute/transpose helpers written in NumPy, comments in Chinese
"""从 PyTorch 版本移植过来的多头注意力（NumPy 实现）。

原来的代码用了 ``view``、``permute``、``transpose(-2, -1)``，这里写了几个同名的小
函数来模拟它们，这样正文几乎可以逐行对照 PyTorch 版本。
"""

import numpy as np


# ---- 模仿 torch 张量方法的小工具 ----
def view(t, *shape):
    # torch 的 view 就是不复制数据的 reshape
    return t.reshape(shape)


def permute(t, *dims):
    return np.transpose(t, dims)


def transpose(t, dim0, dim1):
    return np.swapaxes(t, dim0, dim1)


def size(t, dim):
    return t.shape[dim]


def _softmax(t, dim):
    # 先减去该维上的最大值，防止 exp 溢出
    t = np.asarray(t)
    t = t - t.max(axis=dim, keepdims=True)
    e = np.exp(t)
    return e / e.sum(axis=dim, keepdims=True)


def softmax(x):
    # 和 torch.softmax(x, dim=-1) 一样：在最后一维上归一化
    return _softmax(x, -1)


def scaled_dot_product_attention(Q, K, V):
    d_k = size(Q, -1)
    # scores: (..., T, S)，只交换 K 的最后两维
    scores = Q @ transpose(K, -2, -1) / np.sqrt(d_k)
    attn = softmax(scores)
    return attn @ V, attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        # 每个头分到同样多的特征，必须能整除
        if d_model % num_heads != 0:
            raise ValueError("d_model 必须能被 num_heads 整除")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        gen = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.W_Q = gen.normal(0.0, std, (d_model, d_model))
        self.W_K = gen.normal(0.0, std, (d_model, d_model))
        self.W_V = gen.normal(0.0, std, (d_model, d_model))
        self.W_O = gen.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        # (B, T, D) -> view 成 (B, T, H, d_k) -> permute 成 (B, H, T, d_k)
        b, t = size(x, 0), size(x, 1)
        return permute(view(x, b, t, self.num_heads, self.d_k), 0, 2, 1, 3)

    def combine_heads(self, x):
        # split_heads 的逆操作：先把头轴换回去，再合并最后两维
        b, h, t, d = x.shape
        return view(permute(x, 0, 2, 1, 3), b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, attn  # attn: (B, H, T, S)，不对头做平均
        return out
