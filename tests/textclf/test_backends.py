"""The backend "auto" picks: measured per network and per-device batch on a GPU, XLA on a CPU; as asked otherwise."""

import pytest

from textclf.training.backends import PALLAS_MLP_BELOW_BATCH, choose_backend


@pytest.mark.parametrize("requested", ["xla", "pallas"])
def test_an_explicit_backend_is_kept(requested):
    for on_gpu in (True, False):
        assert choose_backend(requested, "mlp", 4096, on_gpu) == (requested, f"--backend {requested}")


def test_auto_on_a_gpu_follows_the_measurements():
    backend, why = choose_backend("auto", "mlp", 64, on_gpu=True)
    assert backend == "pallas" and "0.72M vs 0.69M" in why
    assert choose_backend("auto", "mlp", PALLAS_MLP_BELOW_BATCH - 1, on_gpu=True)[0] == "pallas"
    assert choose_backend("auto", "mlp", PALLAS_MLP_BELOW_BATCH, on_gpu=True)[0] == "xla"
    assert choose_backend("auto", "mlp", 4096, on_gpu=True)[0] == "xla"
    backend, why = choose_backend("auto", "cnn", 64, on_gpu=True)
    assert backend == "xla" and "images/s" in why


def test_auto_on_a_cpu_is_xla():
    for network in ("mlp", "cnn"):
        backend, why = choose_backend("auto", network, 64, on_gpu=False)
        assert backend == "xla" and why.startswith("auto: no GPU")
