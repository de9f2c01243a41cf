# expect: @ID@-no-scale
import numpy as np


def attention_scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2)
