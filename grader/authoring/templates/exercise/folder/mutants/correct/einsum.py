# expect: correct
import numpy as np


def attention_scores(Q, K):
    return np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(Q.shape[-1])
