# expect: correct
# Pinyin names and comments; projections with np.tensordot, softmax through a log-sum-exp; no mistakes.
import numpy as np


def softmax(x):
    # zui da zhi: mei yi hang de zui da zhi, bao liu zui hou yi zhou
    shuru = np.asarray(x, dtype=np.float64)
    zuida = np.max(shuru, axis=-1, keepdims=True)
    # log-sum-exp: zuida + log(sum(exp(x - zuida)))
    duishu_he = zuida + np.log(np.sum(np.exp(shuru - zuida), axis=-1, keepdims=True))
    return np.exp(shuru - duishu_he)


def scaled_dot_product_attention(Q, K, V):
    kuandu = Q.shape[-1]                       # mei ge tou de kuandu d_k
    jian_zhuanzhi = np.swapaxes(K, -1, -2)     # zhi jiaohuan zui hou liang zhou
    defen = np.matmul(Q, jian_zhuanzhi) / np.sqrt(kuandu)
    quanzhong = softmax(defen)                 # dui jian (S) guiyihua
    shuchu = np.matmul(quanzhong, V)
    return shuchu, quanzhong


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            # tou shu bi xu zheng chu moxing kuandu
            raise ValueError("d_model bu neng bei num_heads zheng chu")
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
        pici, changdu, _ = x.shape
        fen = x.reshape(pici, changdu, self.num_heads, self.d_k)
        return np.moveaxis(fen, 2, 1)          # (B, T, H, d_k) -> (B, H, T, d_k)

    def combine_heads(self, x):
        pici, toushu, changdu, kuan = x.shape
        return np.moveaxis(x, 1, 2).reshape(pici, changdu, toushu * kuan)

    def _touying(self, x, juzhen):
        # x @ W, yong tensordot: x de zui hou yi zhou he W de di 0 zhou
        return np.tensordot(x, juzhen, axes=([2], [0]))

    def forward(self, Q, K, V, return_weights=False):
        cha = self.split_heads(self._touying(Q, self.W_Q))   # chaxun
        jian = self.split_heads(self._touying(K, self.W_K))  # jian, changdu S
        zhi = self.split_heads(self._touying(V, self.W_V))   # zhi
        tou_shuchu, quanzhong = scaled_dot_product_attention(cha, jian, zhi)
        shuchu = self._touying(self.combine_heads(tou_shuchu), self.W_O)
        if return_weights:
            return shuchu, quanzhong
        return shuchu
