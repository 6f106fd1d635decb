"""How fast and with how much memory a damaged model file is refused: a trained sample model rewritten with NaN
weights, integer weights, a member that inflates to SIZE_GIB GiB, and a file of random bytes of RANDOM_MB MB.
Prints a table (time to refuse, peak Python allocations during the refusal, growth of the process's peak RSS).

    python -m benchmarks.service.damaged_models [--gib 4] [--random-mb 512]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np

from textclf.errors import ArtifactError
from textclf.inference.artifacts import load_model
from textclf.runs.run import train
from textclf.settings import Settings

SAMPLE = Path(__file__).resolve().parents[2] / "textclf" / "sample_corpus"


def _variants(good: Path, folder: Path, gib: int, random_mb: int) -> dict[str, Path]:
    with np.load(good, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    out = {}
    for name, change in (
        ("NaN weights", {"w2": np.full_like(arrays["w2"], np.nan)}),
        ("int64 weights", {"w1": arrays["w1"].astype(np.int64)}),
    ):
        out[name] = folder / f"{name.split()[0]}.npz"
        np.savez(out[name], **{**arrays, **change})
    bomb = folder / "bomb.npz"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info.filename))
        with target.open("padding.npy", "w", force_zip64=True) as member:
            for _ in range(gib * 64):
                member.write(bytes(1 << 24))
    out[f"a member inflating to {gib} GiB"] = bomb
    noise = folder / "noise.npz"
    with open(noise, "wb") as handle:
        for _ in range(random_mb):
            handle.write(os.urandom(1 << 20))
    out[f"{random_mb} MB of random bytes"] = noise
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=int, default=4)
    parser.add_argument("--random-mb", type=int, default=512)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ.setdefault("TEXTCLF_HOME", str(folder / "home"))
        good = folder / "good.npz"
        train(SAMPLE, Settings(search="off", epochs=2, hidden=16), db_path=folder / "runs.db", model_path=good)
        print("| damaged file | file MB | refused in s | peak Python allocations MB | peak RSS growth MB | message |")
        print("|---|---:|---:|---:|---:|---|")
        for name, path in _variants(good, folder, args.gib, args.random_mb).items():
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            tracemalloc.start()
            began = time.perf_counter()
            try:
                load_model(path)
                message = "LOADED"
            except ArtifactError as exc:
                message = str(exc).split(" (")[1].split(")")[0] if " (" in str(exc) else str(exc)
            seconds = time.perf_counter() - began
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
            print(
                f"| {name} | {path.stat().st_size / 2**20:,.1f} | {seconds:.3f} | {peak / 2**20:.1f} | {grown:.0f} | "
                f"{message} |"
            )


if __name__ == "__main__":
    main()
