"""Versions of everything that can change a result, stored with every run."""

from __future__ import annotations

import platform
from importlib import metadata


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    names = {
        "textclf": "textclf",
        "jax": "jax",
        "jaxlib": "jaxlib",
        "sklearn": "scikit-learn",
        "numpy": "numpy",
        "scipy": "scipy",
    }
    found = {key: _version(package) for key, package in names.items()}
    found["python"] = platform.python_version()
    return found
