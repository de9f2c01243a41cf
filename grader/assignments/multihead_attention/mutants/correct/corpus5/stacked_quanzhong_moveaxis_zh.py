# expect: correct
# Correct: the four projections live in one (4, D, D) array exposed as W_Q..W_O properties, heads are moved with np.moveaxis; Chinese comments, pinyin names.
"""多头注意力（NumPy 作业）。

四个投影矩阵放在同一个 (4, D, D) 数组 quanzhong 里，
W_Q / W_K / W_V / W_O 只是它的四个切片。
"""

import numpy as np


def softmax(x):
    """沿最后一轴的数值稳定 softmax。"""
    # 每一行减去自己的最大值，指数最大为 exp(0)=1，不会溢出
    zuida = np.max(x, axis=-1, keepdims=True)
    zhishu = np.exp(np.subtract(x, zuida, dtype=np.result_type(x, 1.0)))
    hezhi = np.sum(zhishu, axis=-1, keepdims=True)
    return zhishu / hezhi


def scaled_dot_product_attention(Q, K, V):
    """Q: (B, H, T, d_k)，K/V: (B, H, S, d_k)。返回 (输出, 权重)。"""
    d_k = Q.shape[-1]
    # 只交换 K 的最后两个轴：(B, H, S, d_k) -> (B, H, d_k, S)
    defen = np.matmul(Q, np.moveaxis(K, -1, -2)) / np.sqrt(d_k)  # (B, H, T, S)
    quanzhong = softmax(defen)  # 对键归一化
    shuchu = np.matmul(quanzhong, V)  # (B, H, T, d_k)
    return shuchu, quanzhong


def _juzhen(xuhao, mingzi):
    """把 self.quanzhong[xuhao] 包装成属性，读写都落在同一个大数组上。"""

    def du(self):
        return self.quanzhong[xuhao]

    def xie(self, zhi):
        self.quanzhong[xuhao] = np.asarray(zhi, dtype=float)

    return property(du, xie, doc=f"{mingzi}: (D, D)")


class MultiHeadAttention:
    """多头注意力，投影矩阵右乘：x @ W。"""

    W_Q = _juzhen(0, "W_Q")
    W_K = _juzhen(1, "W_K")
    W_V = _juzhen(2, "W_V")
    W_O = _juzhen(3, "W_O")

    def __init__(self, d_model=8, num_heads=2):
        # 头数必须整除模型宽度，否则每个头分不到一样多的特征
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} 不能被 num_heads={num_heads} 整除")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        suiji = np.random.default_rng(0)
        biaozhuncha = 1.0 / np.sqrt(d_model)
        # 一次抽 4 个矩阵，顺序是 Q, K, V, O
        self.quanzhong = suiji.normal(0.0, biaozhuncha, (4, d_model, d_model))

    def split_heads(self, x):
        """(B, T, D) -> (B, H, T, d_k)。"""
        pici, changdu, _ = x.shape
        fenkuai = x.reshape(pici, changdu, self.num_heads, self.d_k)  # (B, T, H, d_k)
        return np.moveaxis(fenkuai, 2, 1)  # 头轴挪到序列轴前面

    def combine_heads(self, x):
        """(B, H, T, d_k) -> (B, T, D)。"""
        pici, toushu, changdu, kuandu = x.shape
        huiqu = np.moveaxis(x, 1, 2)  # (B, T, H, d_k)
        return huiqu.reshape(pici, changdu, toushu * kuandu)

    def forward(self, Q, K, V, return_weights=False):
        """投影 -> 拆头 -> 注意力 -> 合并 -> 输出投影。"""
        chaxun, jian, zhi = (
            self.split_heads(shuru @ juzhen)
            for shuru, juzhen in zip((Q, K, V), self.quanzhong[:3])
        )
        toushuchu, quanzhong = scaled_dot_product_attention(chaxun, jian, zhi)
        jieguo = self.combine_heads(toushuchu) @ self.quanzhong[3]
        if return_weights:
            return jieguo, quanzhong  # (B, H, T, S)，每个头一张图
        return jieguo
