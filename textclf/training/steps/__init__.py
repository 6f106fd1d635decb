"""The training steps: one network's (step.py: XLA's, and pallas.py: the Pallas kernels'), K networks side by side
(stacked.py), and the optimizers' updates (optimizers.py)."""
