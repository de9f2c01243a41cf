"""Numerical comparisons shared by the checks."""

from __future__ import annotations

import numpy as np


def rel_error(got: np.ndarray, expected: np.ndarray) -> float:
    """Relative error of two arrays: ``|got - expected| / (|got| + |expected|)`` in the 2-norm."""
    got64, expected64 = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    scale = np.linalg.norm(got64) + np.linalg.norm(expected64)
    return float(np.linalg.norm(got64 - expected64) / max(scale, 1e-12))
