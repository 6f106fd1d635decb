"""The Pallas kernels and the training steps built on them, against XLA's same math."""
