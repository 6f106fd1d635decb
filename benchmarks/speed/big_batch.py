"""The final training of a big corpus at several batch sizes, judged by held-out training documents:
`python3 -m benchmarks.speed.big_batch RUN.json TRAIN.jsonl TEST.jsonl [--batches 64,256,1024,4096]`.

RUN.json: the `--json` output of a no-flags `textclf train TRAIN.jsonl --test TEST.jsonl` (its chosen settings);
the vectors come from that run's vector cache (the data dir's only entry, TEXTCLF_HOME), so nothing is vectorized
again; the JSONL files give the labels. Each batch size trains what the run trained (the chosen settings:
networks, rate, decay, at most its epoch count) on the same rows, holding out the same documents as `textclf
train` does (run._held_out_stopping: 20,000, early stopping with patience 1), and prints the held-out accuracy
after each epoch, the epoch kept, the seconds of the first epoch (compilation included) and of the rest, and the
test accuracy of the kept epoch (reported, never used to choose).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def _labels(path: str) -> list[str]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line)["label"] for line in lines if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_json")
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--batches", default="64,256,1024,4096")
    args = parser.parse_args()
    import jax

    from pipelines import vector_cache
    from textclf.inference.text_model import encode_labels
    from textclf.models.weights import host_scores
    from textclf.paths import vector_cache_dir
    from textclf.runs.fitting import held_out_stopping as _held_out_stopping
    from textclf.settings import Settings
    from textclf.training.ensembles import fit_ensemble
    from textclf.training.inputs import TrainingRows, Watch
    from textclf.training.network import fit_network

    run = json.loads(Path(args.run_json).read_text())
    chosen = Settings.from_dict(run["settings"])
    entries = sorted(vector_cache_dir().glob("*.npz"))
    if len(entries) != 1:
        raise SystemExit(f"expected one vector cache entry in {vector_cache_dir()}, found {len(entries)}")
    _, train_x, test_x = vector_cache.load(vector_cache_dir(), entries[0].stem)
    train_labels, test_labels = _labels(args.train), _labels(args.test)
    classes = sorted(set(train_labels))
    train_y, test_y = encode_labels(train_labels, classes), encode_labels(test_labels, classes)
    assert train_x.shape[0] == len(train_y) and test_x.shape[0] == len(test_y)
    networks = chosen.ensemble or 1
    # The run's settings record the epoch early stopping kept; the cap it trained under is the search's choice.
    cap = max(chosen.epochs, int(run["search"]["chosen"].get("epochs", chosen.epochs)))
    print(
        f"device: {jax.devices()[0].device_kind}; {networks} network(s), lr {chosen.learning_rate:g}, wd "
        f"{chosen.weight_decay:g}, at most {cap} epochs; {train_x.shape[0]:,} x {train_x.shape[1]:,} training rows"
    )
    print("| batch | held-out accuracy per epoch | kept epoch | first epoch s | other epochs s | test accuracy |")
    print("|---:|---|---:|---:|---:|---:|")
    for batch in (int(b) for b in args.batches.split(",")):
        settings = chosen.replace(batch_size=batch, epochs=cap)
        kept, stopping = _held_out_stopping(train_x, train_y, settings.seed)
        start = time.perf_counter()
        if networks > 1:
            params, _, compile_s, train_s = fit_ensemble(
                TrainingRows(train_x, train_y, len(classes), training_rows=kept),
                settings.replace(ensemble=networks, epochs=cap, batch_size=batch, pinned=("epochs",)),
                Watch(early_stopping=stopping),
            )
        else:
            result = fit_network(
                TrainingRows(train_x[kept], train_y[kept], len(classes)),
                settings.replace(ensemble=1),
                "xla",
                Watch(early_stopping=stopping),
            )
            params, compile_s, train_s = result.params, result.compile_seconds, result.train_seconds
        wall = time.perf_counter() - start
        test = float((host_scores(params, test_x).argmax(axis=1) == test_y).mean())
        curve = " / ".join(f"{a:.4f}" for a in stopping.accuracies)
        print(
            f"| {batch:,} | {curve} | {stopping.best_epoch} | {compile_s:.2f} | {train_s:.2f} (wall {wall:.1f}) "
            f"| {test:.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
