"""Which device and which implementation train the network.

"xla": plain JAX (textclf/models/mlp.py), on whatever device JAX sees.
"pallas": the custom Pallas kernels (pallas_kernels/), GPU only; on a CPU they run only in interpret mode,
which is for tests, so the product refuses it there.
"auto": xla on a CPU; on a GPU whichever measured faster for the network and the batch a device takes
(choose_backend). The run records the choice and why (runs.backend_reason, `textclf runs show`).
"""

from __future__ import annotations

import importlib.util as importlib_util
import os
import sys
import threading
from pathlib import Path
from typing import Callable

from textclf.errors import BackendError

# The search's programs compile with XLA's Triton GEMM fusions off (their products go to cuBLAS): a first search is
# mostly compilation, which they lengthen, and a compiled search runs as fast either way (docs/decisions.md, "The
# search's cost"). The one network's step keeps them, where its training is short too (network.quick_compile).
SEARCH_COMPILER_OPTIONS = {"xla_gpu_enable_triton_gemm": False}

# The seeded initial weights compile with LLVM's -O1 (XLA's default: -O3): on a CPU most of their compile is the
# optimisation of jax's threefry loop, and -O1 gives the same bits (tests/textclf/training/test_network.py checks it)
# in less time (docs/decisions.md, "The initial weights compiled at LLVM's -O1").
INIT_COMPILER_OPTIONS = {"xla_backend_optimization_level": 1}


def configure_compilation(cache_dir: Path) -> None:
    """Persist compiled programs so a second process skips compilation (jax's persistent cache), and lower the
    random initialisations to jax's threefry kernel on a GPU (the same numbers; XLA's own lowering of them
    compiled for 1.8-2.1 s of a cold news4 run's search on an H100)."""
    import jax

    jax.config.update("jax_threefry_gpu_kernel_lowering", True)

    cache_dir.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(cache_dir))
    # Every program, however quick to compile: a new corpus of a seen shape bucket then compiles none of them again
    # (docs/decisions.md, "Shape buckets").
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def device_kind() -> str:
    """ "gpu" or "cpu" (whatever JAX's default backend is)."""
    import jax

    return jax.default_backend()


def expected_platform() -> str:
    """The platform JAX's default backend is expected to be, read without starting JAX (so that host work planned
    for it can go ahead while JAX starts): JAX_PLATFORMS's first entry where set, else "gpu" where a CUDA plugin is
    installed and an NVIDIA device node exists, else "cpu". A guess: work prepared for it is checked against
    jax.default_backend() once JAX has started (textclf/training/search/halving.py, Prepared)."""
    requested = os.environ.get("JAX_PLATFORMS", "").split(",")[0].strip().lower()
    if requested:
        return "gpu" if requested in ("cuda", "rocm") else requested
    plugins = [name for name in ("jax_cuda13_plugin", "jax_cuda12_plugin") if importlib_util.find_spec(name)]
    return "gpu" if plugins and Path("/dev/nvidiactl").exists() else "cpu"


def device_description() -> str:
    import jax

    device = jax.devices()[0]
    return f"{device.platform}:{getattr(device, 'device_kind', device.platform)}"


# "auto" on a GPU follows side-by-side measurements of the product's own training (BENCHMARKS.md, "What auto
# picks on a GPU"): network -> rows (from this many documents or images a device, the backend, the measurement),
# ascending. The MLP: XLA is ahead everywhere measured, the step from pieces at every batch size from 64 to
# 4,096 (news4 rows, H100: 712k vs 696k docs/s at 64, 7.51M vs 7.16M at 1,024, 17.46M vs 14.68M at 4,096;
# agnews7600 rows 1.04M vs 0.85M at 64). The CNN: Pallas at its default batch (64), measured against XLA's
# path with its fused reshape-and-max pool (textclf/models/cnn.py max_pool), the Pallas convolutions' dW read as
# whole pixel rows and the pool fused into the convolution (pallas_kernels/conv2d.py). A batch range where the
# other path measures faster gets its own row. Measured on H100 and H200; another GPU gets the same rows.
AUTO_ON_GPU: dict[str, list[tuple[int, str, str]]] = {
    "mlp": [
        (
            1,
            "xla",
            "XLA's step measured faster than the Pallas one at every batch size from 64 to 4,096 "
            "documents a device (news4 rows, H100: 712k vs 696k docs/s at 64, 7.51M vs 7.16M at 1,024)",
        )
    ],
    "cnn": [
        (
            1,
            "pallas",
            "the Pallas convolutions measured faster at 64 images a device (the default CNN's "
            "Fashion-MNIST-shaped epoch with the pool fused, H200: 357,028 vs 324,087 images/s; "
            "H100: 352,935 vs 278,767)",
        ),
        (65, "xla", "Pallas measured at 64 images a device only; above that XLA's cuDNN convolutions are kept"),
    ],
}


def resolve_backend(requested: str) -> str:
    """The backend as asked, checked against the device ("auto" stays "auto": choose_backend decides it once
    the network and the batch size are known)."""
    if requested == "pallas" and device_kind() != "gpu" and not os.environ.get("TEXTCLF_PALLAS_INTERPRET"):
        raise BackendError(
            "backend 'pallas' needs a GPU and JAX sees none: use --backend xla (or auto), "
            "or install the GPU extra (pip install '.[gpu]') on a machine with an NVIDIA GPU"
        )
    return requested


def choose_backend(requested: str, network: str, batch_per_device: int, on_gpu: bool) -> tuple[str, str]:
    """-> (the backend that trains, why). network: "mlp" or "cnn"; batch_per_device: documents (images) each
    device takes of a batch."""
    if requested != "auto":
        return requested, f"--backend {requested}"
    if not on_gpu:
        return "xla", "auto: no GPU (the Pallas kernels run on a CPU only in interpret mode)"
    rows = [row for row in AUTO_ON_GPU[network] if row[0] <= batch_per_device] or AUTO_ON_GPU[network][:1]
    _, backend, measured = rows[-1]
    return backend, f"auto at {batch_per_device} a device: {measured}"


def _first_device_work() -> None:
    """The first allocation and the first compiled program on a device cost more than any later one (the GPU
    allocator's pool, loading the compiler): measured 1.2-1.5 s on the H100 for one small program. Done here,
    in the warm-up, it overlaps vectorizing instead of delaying training."""
    import jax
    import numpy as np

    jax.jit(lambda x: x + 1)(jax.device_put(np.zeros(8, np.float32))).block_until_ready()


class BackendWarmup:
    """Import JAX, start its backend and run a first small program (the GPU: 2.5-4.5 s on a fresh H100 machine)
    on a thread, so that it overlaps reading and vectorizing the corpus. start() once the vectorizing workers are forked
    (pipelines/workers.py);
    result() -> (backend, device description), raising what the thread raised (e.g. BackendError).
    along: called as the warm-up starts, to start another thread that must not run while the workers are forked
    either (the run's heartbeat: with it running from the run's start, every `textclf train` found a second thread
    and started fresh loky workers instead of forking, which then transformed a million documents in 15.7 s against
    7 s forked, BENCHMARKS.md "Big corpora with no flags")."""

    def __init__(self, requested: str, cache_dir: Path, along: Callable[[], None] | None = None):
        self.requested, self.cache_dir, self.along = requested, cache_dir, along
        self.cold = "jax" not in sys.modules  # JAX not yet started in this process: the warm-up takes seconds
        self._thread = threading.Thread(target=self._run, name="textclf-backend-warmup", daemon=True)
        self._outcome: tuple[str, str] | BaseException | None = None

    def _run(self) -> None:
        try:
            backend = resolve_backend(self.requested)
            configure_compilation(self.cache_dir)
            description = device_description()
            _first_device_work()
            self._outcome = (backend, description)
        except BaseException as exc:  # handed to result(), in the caller's thread
            self._outcome = exc

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def start(self) -> "BackendWarmup":
        if not self.started:  # a thread starts once
            if self.along is not None:
                self.along()
            self._thread.start()
        return self

    def result(self) -> tuple[str, str]:
        self.start()._thread.join()
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome
