"""textclf: a bag-of-words MLP text classifier with a CLI, a run database and GPU kernels."""

import os

__version__ = "0.1.0"

# The GPU allocator grows its pool as programs need memory instead of reserving 75% of the card at the backend's
# start: on an H100 that reservation alone held ~1.9 GB of host memory (the runtime's anonymous memory after a
# first program: 2,352 MB reserved, 453 MB growing; `python -m benchmarks.memory.runtime_memory`, BENCHMARKS.md "Big
# corpora with no flags"), a third of a million-document run's peak; and each server process would reserve its
# own share beside the daemon's. Read by JAX when its backend starts, so set here, before any of textclf imports
# it; a value the user set is kept.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def __getattr__(name: str):
    # Lazy, so `import textclf` (and `textclf predict`) does not pay for importing JAX.
    if name == "TextClassifier":
        from textclf.estimator import TextClassifier

        return TextClassifier
    raise AttributeError(name)
