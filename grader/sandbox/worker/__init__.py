"""The untrusted side's code: fork server, worker, confinement. Standard library and NumPy only; run by path."""
