# expect: correct
# no mistakes: explicit loops over batch and heads, apply_along_axis softmax, matrices stored transposed and applied as x @ Wt.T, Chinese comments.
import math

import numpy as np


def _softmax_1d(row):
    # 一维向量的 softmax：先减去最大值，防止 exp 溢出
    m = np.max(row)
    e = np.exp(row - m)
    return e / np.sum(e)


def softmax(x):
    # 转成新的浮点数组（整数输入也可以），不碰调用者的数组
    arr = np.array(x, dtype=np.float64)
    # 沿最后一个轴逐行计算
    return np.apply_along_axis(_softmax_1d, -1, arr)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d_k = Q.shape
    S = K.shape[2]
    out = np.zeros((B, H, T, V.shape[-1]))
    weights = np.zeros((B, H, T, S))
    scale = 1.0 / math.sqrt(d_k)
    for b in range(B):          # 每个样本
        for h in range(H):      # 每个头
            scores = (Q[b, h] @ K[b, h].T) * scale   # (T, S)
            w = softmax(scores)                       # 对键（最后一轴）归一化
            weights[b, h] = w
            out[b, h] = w @ V[b, h]                   # (T, d_k)
    return out, weights


class MultiHeadAttention:
    """权重按转置形式保存（习惯了 PyTorch 的 nn.Linear），对外仍提供 W_Q 等属性。"""

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model 必须能被 num_heads 整除: %d %% %d != 0" % (d_model, num_heads))
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        # 注意顺序：Q, K, V, O —— 保存的是转置
        self._wq_t = rng.normal(0.0, scale, (d_model, d_model)).T
        self._wk_t = rng.normal(0.0, scale, (d_model, d_model)).T
        self._wv_t = rng.normal(0.0, scale, (d_model, d_model)).T
        self._wo_t = rng.normal(0.0, scale, (d_model, d_model)).T

    # ---- 对外的 (D, D) 矩阵，x @ W 的形式 ----
    @property
    def W_Q(self):
        return self._wq_t.T

    @W_Q.setter
    def W_Q(self, w):
        self._wq_t = np.asarray(w).T

    @property
    def W_K(self):
        return self._wk_t.T

    @W_K.setter
    def W_K(self, w):
        self._wk_t = np.asarray(w).T

    @property
    def W_V(self):
        return self._wv_t.T

    @W_V.setter
    def W_V(self, w):
        self._wv_t = np.asarray(w).T

    @property
    def W_O(self):
        return self._wo_t.T

    @W_O.setter
    def W_O(self, w):
        self._wo_t = np.asarray(w).T

    def split_heads(self, x):
        B, T, _ = x.shape
        out = np.empty((B, self.num_heads, T, self.d_k), dtype=np.result_type(x, np.float64))
        for h in range(self.num_heads):
            # 第 h 个头拿连续的一段特征
            out[:, h] = x[:, :, h * self.d_k:(h + 1) * self.d_k]
        return out

    def combine_heads(self, x):
        # 把各个头按顺序拼回去：(B, H, T, d_k) -> (B, T, H*d_k)
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def _linear(self, x, w_t):
        # 和 nn.Linear 一样：y = x @ W^T（这里 W^T 就是原来的 W）
        return np.stack([x[b] @ w_t.T for b in range(x.shape[0])])

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self._linear(Q, self._wq_t))
        k = self.split_heads(self._linear(K, self._wk_t))   # K、V 的长度可以和 Q 不同
        v = self.split_heads(self._linear(V, self._wv_t))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self._linear(self.combine_heads(heads), self._wo_t)
        if return_weights:
            return out, weights
        return out
