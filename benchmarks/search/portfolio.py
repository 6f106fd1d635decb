"""The search's portfolio, rebuilt from an offline study: `python3 -m benchmarks.search.portfolio curves TRAIN.jsonl
[...] --out DIR [--seeds 0]` then `python3 -m benchmarks.search.portfolio build DIR [--write]`.

curves: for each training file (never its test file) and seed, every vectorizer variant of the grid (stop words
x longest n-gram x NB weights x sublinear tf at batch 64, and the four stop words x n-grams at batch 256 with NB
weights off) trains on each of the search's folds as a round of textclf's search does (training/search/halving.py:
the same folds, columns, shapes, rates side by side, epochs and early stopping), and its validation curves are
written to DIR/NAME-SEED.json. On the GPU: `bash benchmarks/gpu/portfolio.sh`.

build: reads every curve file and, per corpus, scores each variant by the best (rate, decay, epochs) of its mean
curve over the folds, and its regret: how far that is below the corpus's best variant. The portfolio is built
greedily (each next variant the one that lowers the mean over corpora of the best regret within the portfolio,
the settings' defaults first), and judged leave-one-corpus-out: each corpus is scored by a portfolio built
without it, with an oracle's choice and as the search chooses (successive halving: every variant on fold 0 for a
third of the epochs, the best two and the defaults on every fold); beside them the search's space before the
portfolio (a race of stop words x n-grams and its winner's refinements), with an oracle's choice and as the race
chose. Prints a table; --write stores the portfolio built from every corpus as textclf/training/search/portfolio.json
(the product's data file).
"""

from __future__ import annotations

import argparse
import itertools
import math
import json
import os
import time
from pathlib import Path

import numpy as np

from pipelines.workers import WorkerPool

PORTFOLIO_FILE = Path(__file__).resolve().parents[2] / "textclf" / "training" / "portfolio.json"
# Each field's first value is Settings' default: the portfolio starts from the defaults.
GRID = {
    "stop_words": ("english", None),
    "ngram_max": (2, 1),
    "nb_weighting": (True, False),
    "sublinear_tf": (True, False),
    "batch_size": (64, 256),
}
FIELDS = tuple(GRID)


def _grid() -> list[dict]:
    """Every combination at batch 64; batch 256 beside the four stop words x n-grams with NB weights off and
    sublinear tf."""
    small = [dict(zip(FIELDS, values)) for values in itertools.product(*list(GRID.values())[:-1], (64,))]
    return small + [{**v, "batch_size": 256} for v in small if not v["nb_weighting"] and v["sublinear_tf"]]


def curves(paths: list[str], out: Path, seeds: list[int]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # Workers forked before JAX is imported, as `textclf train` does (pipelines/workers.py).
    with WorkerPool(os.cpu_count() or 1) as pool:
        import jax

        from pipelines.corpus import read_corpus
        from textclf.settings import Settings
        from textclf.training.search import search_curves
        from textclf.training.search.folds import Variant

        platform = jax.default_backend()
        variants = [Variant(**v) for v in _grid()]
        for path in paths:
            corpus = read_corpus(path)
            name = Path(path).parent.name
            for seed in seeds:
                start = time.perf_counter()
                results, folds, optimizers = search_curves(
                    list(corpus.texts), list(corpus.labels), Settings(seed=seed), pool, platform, variants
                )
                record = {
                    "corpus": name,
                    "seed": seed,
                    "platform": platform,
                    "documents": len(corpus.texts),
                    "validation": [len(val) for _, val in folds],
                    "optimizers": optimizers,
                    "variants": [v._asdict() for v in variants],
                    "curves": [[results[(v, f)].tolist() for f in range(len(folds))] for v in variants],
                }
                (out / f"{name}-{seed}.json").write_text(json.dumps(record))
                print(
                    f"{name} seed {seed}: {len(variants)} variants x {len(folds)} folds in "
                    f"{time.perf_counter() - start:.1f} s",
                    flush=True,
                )


class Study:
    """One corpus's curves: (variants, folds, epochs, networks) validation accuracy, zero after an early stop."""

    def __init__(self, record: dict):
        self.name = f"{record['corpus']}-{record['seed']}"
        self.corpus = record["corpus"]
        self.variants = [tuple(v[f] for f in FIELDS) for v in record["variants"]]
        longest = max(len(c) for per_variant in record["curves"] for c in per_variant)
        self.curves = np.zeros((len(self.variants), len(record["curves"][0]), longest, len(record["optimizers"])))
        for i, per_variant in enumerate(record["curves"]):
            for f, curve in enumerate(per_variant):
                self.curves[i, f, : len(curve)] = curve
        self.score = self.curves.mean(axis=1).max(axis=(1, 2))  # (variants,) the best of the fold mean
        self.regret = self.score.max() - self.score

    def index(self, variant: tuple) -> int:
        return self.variants.index(variant)

    def halving(self, portfolio: list[tuple]) -> tuple:
        """The variant successive halving chooses from the portfolio, by the product's rules (SearchRules'
        first_rung and halving_keep, as textclf/training/search/halving.py applies them): every variant on fold 0
        for first_rung of the epochs, the halving_keep best there and the defaults on every fold, the best mean."""
        from textclf.training.search.rules import SearchRules

        rules = SearchRules()
        rows = [self.index(v) for v in portfolio]
        rung = max(1, math.ceil(self.curves.shape[2] * rules.first_rung))
        alive = sorted(rows, key=lambda i: -self.curves[i, 0, :rung].max())[: rules.halving_keep]  # (a stable sort)
        alive += [] if rows[0] in alive else [rows[0]]  # the defaults go on too
        return self.variants[max(alive, key=lambda i: self.score[i])]

    def race(self, default: tuple) -> tuple:
        """The variant the search before the portfolio chose: the race (stop words x n-grams) on fold 0, its best
        three on every fold, then the winner's refinements on fold 0, those that matched it on every fold."""
        race = _today(default, self)[:4]
        alive = sorted(race, key=lambda v: -self.curves[self.index(v), 0].max())[:3]
        winner = max(alive, key=lambda v: self.score[self.index(v)])
        fold0 = self.curves[self.index(winner), 0].max()
        refined = [v for v in _refined(winner) if v in self.variants and self.curves[self.index(v), 0].max() >= fold0]
        return max(alive + refined, key=lambda v: self.score[self.index(v)])


def _greedy(studies: list[Study], size: int, first: tuple) -> list[tuple]:
    portfolio = [first]
    candidates = studies[0].variants
    while len(portfolio) < size:

        def mean_regret(extra):
            chosen = portfolio + [extra]
            return np.mean([min(s.regret[s.index(v)] for v in chosen) for s in studies])

        portfolio.append(min((v for v in candidates if v not in portfolio), key=mean_regret))
    return portfolio


def _today(default: tuple, study: Study) -> list[tuple]:
    """The search's space before the portfolio, for a corpus: the race (stop words x n-grams) and its winner's
    one-field changes (those the grid holds: its batch 256 only with NB weights off)."""
    d = dict(zip(FIELDS, default))
    race = [tuple({**d, "stop_words": s, "ngram_max": n}[f] for f in FIELDS) for n in (2, 1) for s in ("english", None)]
    winner = max(race, key=lambda v: study.score[study.index(v)])
    return race + [v for v in _refined(winner) if v in study.variants]


def _refined(winner: tuple) -> list[tuple]:
    w = dict(zip(FIELDS, winner))
    return [
        tuple({**w, field: value}[f] for f in FIELDS)
        for field in ("nb_weighting", "sublinear_tf", "batch_size")
        for value in GRID[field]
        if value != w[field]
    ]


def build(folder: Path, size: int, write: bool) -> None:
    studies = [Study(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))]
    default = tuple(GRID[f][0] for f in FIELDS)
    print(
        "| corpus (seed) | best variant | the race's space, oracle: regret | the race as it chose | "
        "portfolio without it, oracle | portfolio without it, halving |"
    )
    print("|---|---|---:|---:|---:|---:|")
    rows = []
    for study in studies:
        others = [s for s in studies if s.corpus != study.corpus]
        portfolio = _greedy(others, size, default)
        today = min(study.regret[study.index(v)] for v in _today(default, study))
        oracle = min(study.regret[study.index(v)] for v in portfolio)
        halving = study.regret[study.index(study.halving(portfolio))]
        raced = study.regret[study.index(study.race(default))]
        rows.append((today, raced, oracle, halving))
        print(
            f"| {study.name} | {dict(zip(FIELDS, study.variants[int(study.score.argmax())]))} | "
            + " | ".join(f"{100 * r:.2f}" for r in rows[-1])
            + " |"
        )
    print("| mean (points) | | " + " | ".join(f"{m:.2f}" for m in np.mean(rows, axis=0) * 100) + " |")
    portfolio = _greedy(studies, size, default)
    print("portfolio from every corpus:", [dict(zip(FIELDS, v)) for v in portfolio])
    if write:
        lines = ",\n".join(f"  {json.dumps(list(v))}" for v in portfolio)
        corpora = json.dumps(sorted({s.corpus for s in studies}))
        PORTFOLIO_FILE.write_text(
            f'{{"fields": {json.dumps(list(FIELDS))},\n "corpora": {corpora},\n "variants": [\n{lines}\n ]}}\n'
        )
        print(f"wrote {PORTFOLIO_FILE}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("curves", help="train every variant of the grid on each corpus's folds")
    run.add_argument("corpora", nargs="+")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--seeds", default="0")
    made = commands.add_parser("build", help="the portfolio and its leave-one-corpus-out regret")
    made.add_argument("folder", type=Path)
    made.add_argument("--size", type=int, default=7)
    made.add_argument("--write", action="store_true", help=f"store it as {PORTFOLIO_FILE.name}")
    args = parser.parse_args()
    if args.command == "curves":
        curves(args.corpora, args.out, [int(s) for s in args.seeds.split(",")])
    else:
        build(args.folder, args.size, args.write)


if __name__ == "__main__":
    main()
