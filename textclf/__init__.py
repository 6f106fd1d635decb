"""textclf: a bag-of-words MLP text classifier with a CLI, a run database and GPU kernels."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # Lazy, so `import textclf` (and `textclf predict`) does not pay for importing JAX.
    if name == "TextClassifier":
        from textclf.estimator import TextClassifier

        return TextClassifier
    raise AttributeError(name)
