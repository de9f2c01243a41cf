"""Checks of the backward-pass exercise; public ones ship to students, so they import nothing instructor-only."""

# How feedback names each returned gradient, per graded function.
GRADIENT_NAMES = {
    "softmax_backward": ("dscores",),
    "attention_backward": ("dQ", "dK", "dV"),
    "backward": ("out", "(dQ, dK, dV)", "dW_Q", "dW_K", "dW_V", "dW_O"),
}
