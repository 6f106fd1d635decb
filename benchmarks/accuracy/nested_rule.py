"""A rule of the model search, or a default setting, judged on training documents alone: `python3 -m
benchmarks.accuracy.nested_rule TRAIN.jsonl [...] (--rule default_variant_errors | --setting min_df) --values
0,1 [--seeds 0,1] [--held-out 0.25] [--documents N]`.

For each training file and seed, a stratified `--held-out` share of the training documents is set aside; then,
for each value of the rule (a field of textclf.training.search.rules.SearchRules, passed to train as
`replace(SearchRules(), field=value)`) or of the Settings field (given as a default, not pinned: the search still
searches what it searches), a
no-flags `textclf train` (textclf.runs.run.train, with its own empty run database, so that no recorded search is
reused) trains on the rest and is scored on the set-aside documents. The test file is never read: this is how a
rule is chosen "by validation on the training data". Prints one markdown row per (file, seed, value): the
accuracy on the set-aside documents, how many of them, and what the search chose.

Several rules change together where --rule names them comma-separated and each value gives theirs
slash-separated (`--rule patience,patience_steps --values 3/100,5/200`); a tuple rule takes its numbers
colon-separated (`--rule learning_rates --values 0.001:0.003:0.01,0.001:0.003:0.01:0.03`).
--documents N trains on a stratified N of the rest (a small corpus), still scored on all the set-aside documents.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def _split(path: str, share: float, seed: int, into: Path, documents: int | None = None) -> tuple[Path, Path, int]:
    """The training file's documents in two stratified parts, written as JSONL -> (rest, set aside, its size);
    documents: keep only that many of the rest (stratified)."""
    from sklearn.model_selection import train_test_split

    from pipelines.corpus import read_corpus

    corpus = read_corpus(path)
    rest, aside = train_test_split(
        list(range(len(corpus.labels))), test_size=share, random_state=seed, stratify=corpus.labels
    )
    if documents and documents < len(rest):
        rest, _ = train_test_split(
            rest, train_size=documents, random_state=seed, stratify=[corpus.labels[i] for i in rest]
        )
    paths = into / "rest.jsonl", into / "aside.jsonl"
    for part, out in zip((rest, aside), paths):
        out.write_text("".join(json.dumps({"text": corpus.texts[i], "label": corpus.labels[i]}) + "\n" for i in part))
    return paths[0], paths[1], len(aside)


def _rule_value(current, text: str):
    """A value typed on the command line, of the type of the rule it replaces: a tuple of numbers written
    colon-separated ("0.001:0.003:0.01"), each of the type of the tuple's first element."""
    if isinstance(current, tuple):
        return tuple(type(current[0])(float(part)) for part in text.split(":"))
    return type(current)(float(text))


def _setting_value(current, text: str):
    """A Settings value typed on the command line: a number of the field's type, or the text itself for a field
    of words (linear_loss: "log", "squared_hinge"; a field unset by default takes a number where the text is one)."""
    if isinstance(current, str):
        return text
    if current is None:
        try:
            return float(text)
        except ValueError:
            return text
    return type(current)(float(text))


def _beside(family: dict) -> str:
    """The family trial's linear model beside the network: its validation gain and the gain's standard error."""
    if "mixed_by" not in family:
        return ""
    return f" (beside: {family['mixed_by'] * 100:+.2f} points, error {family['mixed_standard_error'] * 100:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--rule", help="a textclf.training.search.rules.SearchRules field (or several, comma-separated)")
    which.add_argument("--setting", help="a textclf.settings.Settings field")
    parser.add_argument("--values", required=True, help="comma-separated numbers (or words, for a setting of words)")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--held-out", type=float, default=0.25)
    parser.add_argument("--documents", type=int, help="train on this many of the rest (stratified)")
    args = parser.parse_args()
    from textclf.runs.run import train
    from textclf.settings import Settings
    from textclf.training.search.rules import SearchRules

    if args.rule:
        fields = args.rule.split(",")
        name = ", ".join(fields)
    else:
        name = args.setting
    print(f"| training file | seed | {name} | set-aside accuracy | set-aside documents | s | chose |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for path in args.corpora:
        for seed in (int(s) for s in args.seeds.split(",")):
            with tempfile.TemporaryDirectory() as work:
                rest, aside, n_aside = _split(path, args.held_out, seed, Path(work), args.documents)
                for value in args.values.split(","):
                    settings, rules = Settings(seed=seed), SearchRules()
                    if args.rule:  # of the rule's own type (an int stays an int: a width, a count)
                        rules = rules.replace(
                            **{
                                field: _rule_value(getattr(rules, field), part)
                                for field, part in zip(fields, value.split("/"), strict=True)
                            }
                        )
                    else:  # as a default: replace() records no pin, as the Settings default would
                        settings = settings.replace(**{name: _setting_value(getattr(settings, name), value)})
                    start = time.perf_counter()
                    result = train(
                        rest,
                        settings,
                        test_path=aside,
                        db_path=Path(work) / f"{value}.db",
                        model_path=Path(work) / f"{value}.npz",
                        rules=rules,
                    )
                    s = result.model.settings
                    family = result.search.family.to_record() if result.search and result.search.family else {}
                    chose = (
                        f"stop words {s.stop_words}, n-grams {s.ngram_max}, NB {s.nb_weighting}, sublinear tf "
                        f"{s.sublinear_tf}, batch {s.batch_size}, lr {s.learning_rate:g}, wd "
                        f"{s.weight_decay:g}, {s.epochs} epochs, {s.ensemble} network(s)"
                        + (" + characters" if s.char_ngrams else "")
                        + f", family {s.family}"
                        + (f" ({family.get('linear_loss', '')} loss)" if s.family != "network" else "")
                        + _beside(family)
                    )
                    print(
                        f"| {path} | {seed} | {value} | {result.eval_accuracy:.4f} | {n_aside} | "
                        f"{time.perf_counter() - start:.1f} | {chose} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
