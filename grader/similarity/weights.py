"""What a shared fingerprint is worth, from how many students of the class have it.

The stub's and the reference's k-grams never count between two students
(everyone starts from the one; the other is a match of its own, flagged as
such). Among the rest, a fingerprint that only two students share is strong
evidence; one that many share is the way the exercise is usually solved, and
must not make independent students look alike: its weight falls with the
logarithm of its holders and reaches zero at ``COMMON_SHARE`` of the class
(never below ``MIN_COMMON`` students, so a small class keeps its signal).
"""

from __future__ import annotations

import numpy as np

COMMON_SHARE = 0.2  # a fingerprint held by a fifth of the class is how the exercise is solved
REFERENCE_COMMON_SHARE = 0.5  # against the answer key: a copied key may be common, but not in half the class
MIN_COMMON = 4
REFERENCE_FLAG = 0.6  # a submission scoring this against the answer key is flagged as matching it: a key disguised
# (renamed, inlined) scores 0.7 and more; a correct solution written the usual way can reach 0.5 once its
# statements are in canonical form, as the usual way is close to the key


def rarity_weights(holders: np.ndarray, *, class_size: int, common_share: float = COMMON_SHARE) -> np.ndarray:
    """(M,) holder counts -> (M,) weights: 1 for at most two holders, 0 from the common limit on."""
    limit = max(float(MIN_COMMON), common_share * class_size)
    counts = np.maximum(holders.astype(float), 2.0)
    weights = 1.0 - np.log(counts / 2.0) / np.log(max(limit, 2.5) / 2.0)
    return np.clip(weights, 0.0, 1.0)
