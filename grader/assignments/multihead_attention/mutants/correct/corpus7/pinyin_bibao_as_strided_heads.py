# expect: correct
# 拼音命名 + 闭包：forward 由闭包工厂生成，闭包在调用时才读取 self.W_Q 等；split_heads 用 as_strided 按输入自己的 strides 取视图再复制。
"""多头注意力（NumPy 版）。变量名用拼音，注释用中文。"""

import numpy as np
from numpy.lib.stride_tricks import as_strided


def softmax(x):
    shuru = np.asarray(x)                                # 输入，不改动它
    zuida = np.max(shuru, axis=-1, keepdims=True)        # 每行最大值
    pingyi = shuru - zuida                               # 平移后每个指数都 <= 0
    # log-sum-exp 写法：exp(a - log(sum(exp(a))))
    duishu_he = np.log(np.sum(np.exp(pingyi), axis=-1, keepdims=True))
    return np.exp(pingyi - duishu_he)


def scaled_dot_product_attention(Q, K, V):
    kuandu = Q.shape[-1]                                  # d_k，单个头的宽度
    defen = np.matmul(Q, np.swapaxes(K, -1, -2))          # 得分 (B, H, T, S)
    defen = defen / np.sqrt(kuandu)
    quanzhong = softmax(defen)                            # 权重，对键归一化
    shuchu = np.matmul(quanzhong, V)                      # 输出 (B, H, T, d_k)
    return shuchu, quanzhong


def _zuo_touying(ceng, mingzi):
    """返回一个投影闭包；矩阵在每次调用时从 ceng 上现取。"""
    def touying(x):
        return x @ getattr(ceng, mingzi)
    return touying


def _zuo_qianxiang(ceng):
    """闭包工厂：返回 forward 函数。"""
    tou_q = _zuo_touying(ceng, "W_Q")
    tou_k = _zuo_touying(ceng, "W_K")
    tou_v = _zuo_touying(ceng, "W_V")
    tou_o = _zuo_touying(ceng, "W_O")

    def qianxiang(Q, K, V, return_weights=False):
        cha = ceng.split_heads(tou_q(Q))      # 查询 (B, H, T, d_k)
        jian = ceng.split_heads(tou_k(K))     # 键   (B, H, S, d_k)
        zhi = ceng.split_heads(tou_v(V))      # 值   (B, H, S, d_k)
        tou_shuchu, quanzhong = scaled_dot_product_attention(cha, jian, zhi)
        jieguo = tou_o(ceng.combine_heads(tou_shuchu))   # (B, T, D)
        if return_weights:
            return jieguo, quanzhong
        return jieguo

    return qianxiang


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model 必须能被 num_heads 整除 / d_model must be divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        suiji = np.random.default_rng(0)
        bili = 1.0 / np.sqrt(d_model)
        self.W_Q = suiji.normal(0.0, bili, (d_model, d_model))
        self.W_K = suiji.normal(0.0, bili, (d_model, d_model))
        self.W_V = suiji.normal(0.0, bili, (d_model, d_model))
        self.W_O = suiji.normal(0.0, bili, (d_model, d_model))
        self._qianxiang = _zuo_qianxiang(self)

    def split_heads(self, x):
        x = np.asarray(x)
        pi, chang, kuan = x.shape                 # 批次、长度、宽度
        if kuan != self.num_heads * self.d_k:
            raise ValueError("宽度不对 / wrong width")
        bu_pi, bu_chang, bu_kuan = x.strides      # 用输入自己的步长，视图也能用
        shitu = as_strided(
            x,
            shape=(pi, self.num_heads, chang, self.d_k),
            strides=(bu_pi, self.d_k * bu_kuan, bu_chang, bu_kuan),
            writeable=False,
        )
        return shitu.copy()                       # 复制一份，不和输入共享内存

    def combine_heads(self, x):
        pi, toushu, chang, kuan = x.shape
        lianxu = np.ascontiguousarray(np.swapaxes(x, 1, 2))   # (B, T, H, d_k)
        return lianxu.reshape(pi, chang, toushu * kuan)

    def forward(self, Q, K, V, return_weights=False):
        return self._qianxiang(Q, K, V, return_weights=return_weights)
