"""A tiny transformer the project trains itself, so its heads show what heads learn.

Two layers of four causal attention heads (width 32, learned positions, no
MLP), trained in NumPy on random letters whose runs repeat
(``grader.tinymodel.tasks``). It grows a previous-token head and induction
heads, and ``grader.tinymodel.roles`` measures that from the weights.

- ``vocabulary``: the start marker and the letters ``a`` to ``z``;
- ``model``: the forward pass (NumPy only; works without ``solutions/``);
- ``tasks``: the training sequences;
- ``train``: the backward pass and the training loop (its attention backward
  is the backward-pass exercise's, so training needs the reference or a
  student's own solution);
- ``store``: the shipped weights, ``trained.npz``;
- ``roles``: each head's role, and the ablation of each head.

May import: entries (which file is the student's work), grading (the reference or the student's own
blocks), sandbox (reading the code cells of an .ipynb), foundation.
"""
