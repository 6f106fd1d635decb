"""Several devices and processes: the batch split across devices (data.py), W1 split by feature rows
(features.py), and several processes joined through JAX's runtime (processes.py)."""
