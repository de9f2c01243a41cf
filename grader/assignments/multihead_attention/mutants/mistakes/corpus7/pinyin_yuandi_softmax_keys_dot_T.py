# expect: softmax-mutates-input, attention-wrong-transpose
# softmax 原地修改输入（x -= 行最大值，np.exp(x, out=x)）; 注意力里写了 Q @ K.T，K.T 把四个轴全部反转，而不是只交换最后两个轴。
import numpy as np


def softmax(x):
    # 省内存：直接在 x 上算
    x -= np.max(x, axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= np.sum(x, axis=-1, keepdims=True)
    return x


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    defen = Q @ K.T / np.sqrt(d_k)          # 得分 = Q K^T / sqrt(d_k)
    quanzhong = softmax(defen)              # 权重
    shuchu = quanzhong @ V                  # 输出
    return shuchu, quanzhong


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model 不能被 num_heads 整除")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        suiji = np.random.default_rng(0)
        bili = 1.0 / np.sqrt(d_model)
        self.W_Q = suiji.normal(0.0, bili, (d_model, d_model))
        self.W_K = suiji.normal(0.0, bili, (d_model, d_model))
        self.W_V = suiji.normal(0.0, bili, (d_model, d_model))
        self.W_O = suiji.normal(0.0, bili, (d_model, d_model))

    def split_heads(self, x):
        pici, changdu, _ = x.shape          # 批次, 长度
        x = x.reshape(pici, changdu, self.num_heads, self.d_k)
        return x.transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        pici, toushu, changdu, kuan = x.shape
        return x.transpose(0, 2, 1, 3).reshape(pici, changdu, toushu * kuan)

    def forward(self, Q, K, V, return_weights=False):
        cha = self.split_heads(Q @ self.W_Q)
        jian = self.split_heads(K @ self.W_K)
        zhi = self.split_heads(V @ self.W_V)
        tou, quanzhong = scaled_dot_product_attention(cha, jian, zhi)
        jieguo = self.combine_heads(tou) @ self.W_O
        if return_weights:
            return jieguo, quanzhong
        return jieguo
