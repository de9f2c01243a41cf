# expect: correct
# Long Chinese docstrings; split_heads takes every d_k-th window of sliding_window_view, combine_heads concatenates the heads along the features; no known mistakes.
"""多头注意力（NumPy 实现）。

作业要求：实现 softmax、缩放点积注意力、拆分/合并多头，以及 MultiHeadAttention 类。

记号说明：
    B    批大小
    H    头的个数
    T    查询序列长度
    S    键/值序列长度
    D    模型宽度 d_model
    d_k  每个头的宽度，等于 D // H

所有投影矩阵都右乘：``x @ W``。
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def softmax(x):
    """沿最后一个轴做数值稳定的 softmax。

    做法：先求每一行（最后一轴）的最大值，并保留这个轴（keepdims=True），
    这样减法可以正确广播到任意维数的输入上。每行减去自己的最大值以后，
    最大的指数是 exp(0) = 1，不会溢出；分母里至少有一项等于 1，也不会出现 0/0。
    -inf 的元素减去有限的最大值仍然是 -inf，exp 以后就是 0，正好符合要求。

    注意：这里不做任何原地运算，输入数组保持不变。

    参数：
        x：任意形状 (..., N) 的实数数组。
    返回：
        与 x 形状相同的数组，每一行非负且和为 1。
    """
    x = np.asarray(x)
    hang_zui_da = np.max(x, axis=-1, keepdims=True)  # 每行的最大值，形状 (..., 1)
    zhi_shu = np.exp(x - hang_zui_da)                # 新数组，不会改动 x
    he = np.sum(zhi_shu, axis=-1, keepdims=True)     # 每行的和，形状 (..., 1)
    return zhi_shu / he


def scaled_dot_product_attention(Q, K, V):
    """缩放点积注意力。

    每个查询与每个键做点积，得到 (B, H, T, S) 的分数矩阵；K 只交换最后两个轴
    （S 和 d_k），前面的批次轴和头轴保持不动。分数除以 sqrt(d_k)，让方差在
    不同的头宽度下都接近 1，softmax 不至于饱和成 one-hot。然后沿着键的方向
    （最后一个轴）做 softmax，再用这些权重对 V 做加权求和。

    参数：
        Q：查询，形状 (B, H, T, d_k)
        K：键，形状 (B, H, S, d_k)
        V：值，形状 (B, H, S, d_k)
    返回：
        (out, weights)，out 形状 (B, H, T, d_k)，weights 形状 (B, H, T, S)。
    """
    d_k = Q.shape[-1]
    K_zhuan_zhi = np.swapaxes(K, -1, -2)            # (B, H, d_k, S)
    fen_shu = np.matmul(Q, K_zhuan_zhi) / np.sqrt(d_k)  # (B, H, T, S)
    quan_zhong = softmax(fen_shu)                   # 对键归一化
    shu_chu = np.matmul(quan_zhong, V)              # (B, H, T, d_k)
    return shu_chu, quan_zhong


class MultiHeadAttention:
    """多头注意力层。

    有四个 (D, D) 的投影矩阵 W_Q、W_K、W_V、W_O，都按 ``x @ W`` 使用。
    forward 每次调用时都直接读取实例上的这四个属性，所以在构造之后替换
    权重也会生效。

    参数：
        d_model：模型宽度 D。
        num_heads：头的个数 H，必须整除 D，否则抛出 ValueError。
    """

    def __init__(self, d_model=8, num_heads=2):
        """检查 D 能否被 H 整除，然后用固定种子初始化四个投影矩阵。

        如果 d_model 不能被 num_heads 整除，每个头分到的宽度就不是整数，
        拆分多头时 reshape 会失败，或者（更糟）悄悄丢掉一部分特征，所以在
        构造函数里就直接拒绝。
        """
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model={d_model} 不能被 num_heads={num_heads} 整除"
            )
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
        """把 (B, T, D) 拆成 (B, H, T, d_k)，第 i 个头拿到特征 i*d_k:(i+1)*d_k。

        用 sliding_window_view 沿特征轴取长度为 d_k 的滑动窗口，得到
        (B, T, D - d_k + 1, d_k)；窗口的起点是 0, 1, 2, ...，我们只要起点是
        d_k 的倍数的那些窗口，也就是步长 d_k 取一次，正好 H 个，形状
        (B, T, H, d_k)。最后把头轴换到序列轴前面。

        sliding_window_view 返回的是只读视图，所以最后复制一份，
        避免后面有人想写入时出错。
        """
        chuang_kou = sliding_window_view(x, self.d_k, axis=-1)  # (B, T, D-d_k+1, d_k)
        kuai = chuang_kou[:, :, :: self.d_k, :]                  # (B, T, H, d_k)
        return np.ascontiguousarray(kuai.transpose(0, 2, 1, 3))  # (B, H, T, d_k)

    def combine_heads(self, x):
        """split_heads 的逆操作：(B, H, T, d_k) -> (B, T, D)。

        沿头轴把每个头 (B, T, d_k) 取出来，按头的顺序在特征轴上拼接，
        第 i 个头就落在特征 i*d_k:(i+1)*d_k。
        """
        ge_tou = [x[:, i] for i in range(x.shape[1])]  # H 个 (B, T, d_k)
        return np.concatenate(ge_tou, axis=-1)         # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        """投影、拆头、注意力、合并、输出投影。

        参数：
            Q：(B, T, D) 查询输入
            K：(B, S, D) 键输入
            V：(B, S, D) 值输入（和 K 的长度相同，可以和 Q 的长度不同）
            return_weights：为真时同时返回 (B, H, T, S) 的注意力权重
        """
        cha_xun = self.split_heads(Q @ self.W_Q)  # (B, H, T, d_k)
        jian = self.split_heads(K @ self.W_K)     # (B, H, S, d_k)
        zhi = self.split_heads(V @ self.W_V)      # (B, H, S, d_k)
        tou_shu_chu, quan_zhong = scaled_dot_product_attention(cha_xun, jian, zhi)
        shu_chu = self.combine_heads(tou_shu_chu) @ self.W_O  # (B, T, D)
        if return_weights:
            return shu_chu, quan_zhong
        return shu_chu
