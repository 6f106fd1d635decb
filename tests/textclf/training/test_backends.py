"""The backend "auto" picks: measured rows per network and per-device batch on a GPU, XLA on a CPU; as asked
otherwise."""

import pytest

from textclf.training import backends
from textclf.training.backends import choose_backend


@pytest.mark.parametrize("requested", ["xla", "pallas"])
def test_an_explicit_backend_is_kept(requested):
    for on_gpu in (True, False):
        assert choose_backend(requested, "mlp", 4096, on_gpu) == (requested, f"--backend {requested}")


def test_auto_on_a_gpu_follows_the_measured_rows(monkeypatch):
    # today's rows: XLA for the MLP at every batch measured; the CNN's Pallas kernels at its default batch
    for network, batch, expected in (
        ("mlp", 64, "xla"),
        ("mlp", 4096, "xla"),
        ("cnn", 64, "pallas"),
        ("cnn", 128, "xla"),
    ):
        backend, why = choose_backend("auto", network, batch, on_gpu=True)
        assert backend == expected and why.startswith(f"auto at {batch} a device: ")
    why = choose_backend("auto", "cnn", 64, on_gpu=True)[1]
    assert "H100" in why and "H200" in why  # the measurements it stands on
    # a batch range where a Pallas path measured faster takes its own row
    monkeypatch.setitem(
        backends.AUTO_ON_GPU, "mlp", [(1, "xla", "small"), (512, "pallas", "big"), (2048, "xla", "huge")]
    )
    assert [choose_backend("auto", "mlp", b, True)[0] for b in (16, 511, 512, 2047, 2048)] == [
        "xla",
        "xla",
        "pallas",
        "pallas",
        "xla",
    ]
    assert choose_backend("auto", "mlp", 1024, True)[1] == "auto at 1024 a device: big"


def test_auto_on_a_cpu_is_xla():
    for network in ("mlp", "cnn"):
        backend, why = choose_backend("auto", network, 64, on_gpu=False)
        assert backend == "xla" and why.startswith("auto: no GPU")


@pytest.mark.parametrize("given, expected", [(None, "false"), ("true", "true")])
def test_importing_textclf_keeps_the_gpu_from_reserving_memory_unless_the_user_says_so(given, expected):
    """textclf sets XLA_PYTHON_CLIENT_PREALLOCATE=false before JAX starts (a reservation of most of the GPU held
    ~1.9 GB of host memory), and leaves a value the user set as it is."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "XLA_PYTHON_CLIENT_PREALLOCATE"}
    if given is not None:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = given
    probe = "import os, textclf; print(os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'])"
    shown = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert shown == expected


def test_the_expected_platform_follows_jax_platforms_then_an_installed_cuda_plugin(monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert backends.expected_platform() == "cpu"
    monkeypatch.setenv("JAX_PLATFORMS", "cuda,cpu")
    assert backends.expected_platform() == "gpu"
    monkeypatch.delenv("JAX_PLATFORMS")
    monkeypatch.setattr(backends.importlib_util, "find_spec", lambda name: None)  # no CUDA plugin installed
    assert backends.expected_platform() == "cpu"
