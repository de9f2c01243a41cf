"""Does not parse: a missing colon and an unclosed bracket."""

import numpy as np


def softmax(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True)
    return e / e.sum(axis=-1, keepdims=True)
