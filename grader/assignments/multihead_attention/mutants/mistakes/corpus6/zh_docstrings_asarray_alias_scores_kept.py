# expect: softmax-mutates-input, attention-returns-scores, combine-heads-wrong-order
# known-miss: softmax overwrites the scores in place, so the scores attention returns are already the weights and attention passes every check as written; its own mistake shows only beside a right softmax, and a call made so is asked for failing checks alone
# softmax works in place on np.asarray(x, dtype=float), which is the caller's own array for float64 input; attention returns the pre-softmax scores as the weights (hidden here because softmax overwrote them); combine_heads transposes to (B, T, d_k, H), putting features d_k-major.
"""多头注意力作业。

形状约定：B 批大小，H 头数，T 查询长度，S 键长度，D 模型宽度，d_k = D // H。
"""

import numpy as np


def softmax(x):
    """沿最后一个轴计算数值稳定的 softmax。

    先用 np.asarray 把输入统一转成 float 数组（这样整数输入也能做 exp），
    然后每一行减去本行的最大值，防止 exp 溢出；为了节省内存，减法、exp
    和除法都用原地运算完成，不再额外分配中间数组。

    参数：
        x：形状 (..., N) 的数组
    返回：
        形状相同的数组，每行和为 1
    """
    z = np.asarray(x, dtype=float)
    z -= np.max(z, axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= np.sum(z, axis=-1, keepdims=True)
    return z


def scaled_dot_product_attention(Q, K, V):
    """缩放点积注意力。

    分数 = Q K^T / sqrt(d_k)，其中 K 只交换最后两个轴；再对最后一个轴（键）
    做 softmax 得到注意力权重，最后权重乘以 V。

    参数：
        Q：(B, H, T, d_k)
        K：(B, H, S, d_k)
        V：(B, H, S, d_k)
    返回：
        (输出, 注意力分数)，形状分别为 (B, H, T, d_k) 和 (B, H, T, S)
    """
    d_k = Q.shape[-1]
    fen_shu = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)  # 注意力分数
    quan_zhong = softmax(fen_shu)
    shu_chu = np.matmul(quan_zhong, V)
    return shu_chu, fen_shu


class MultiHeadAttention:
    """多头注意力。

    四个 (D, D) 的投影矩阵 W_Q、W_K、W_V、W_O，按 x @ W 右乘。
    """

    def __init__(self, d_model=8, num_heads=2):
        """d_model 必须能被 num_heads 整除，否则抛出 ValueError。"""
        if d_model % num_heads != 0:
            raise ValueError("d_model 必须能被 num_heads 整除")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        """(B, T, D) -> (B, T, H, d_k) -> (B, H, T, d_k)。

        先把每个位置的 D 个特征切成 H 段，每段 d_k 个，再把头轴换到序列轴前面。
        """
        B, T, _ = x.shape
        x = x.reshape(B, T, self.num_heads, self.d_k)
        return x.transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        """split_heads 的逆操作：(B, H, T, d_k) -> (B, T, D)。

        把头轴移到序列轴后面，再把头和每头宽度两个轴合并成 D。
        """
        B, H, T, d_k = x.shape
        x = x.transpose(0, 2, 3, 1)  # 把头轴放到最后
        return x.reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        """投影 -> 拆头 -> 注意力 -> 合并 -> 输出投影。

        参数：
            Q：(B, T, D)；K、V：(B, S, D)
            return_weights：为真时一起返回 (B, H, T, S) 的注意力权重
        """
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        tou, quan_zhong = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(tou) @ self.W_O
        if return_weights:
            return out, quan_zhong
        return out
