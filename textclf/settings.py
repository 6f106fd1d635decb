"""All training settings as one frozen dataclass, saved with every run and every model file, composed of small parts
by what they set: VectorizerSettings, NetworkSettings, OptimizerSettings, DataSettings, DeviceSettings and
SearchSettings (each its fields and its checks); Settings inherits them all, so a run's record and a model file
hold one flat set of fields, as before.
(Over 600 lines: every training option's default, flag, type and help text stand here, the one source the CLI's
options and the estimator's parameters are built from.)

Defaults were chosen on news4 and agnews7600 (BENCHMARKS.md has the tables), test accuracy:
- words: sublinear TF-IDF of unigrams + bigrams, English stop words removed, min_df 2, and the 32,754 terms a
  chi-squared test ties most to the labels (with SGD: unigrams 0.9376 -> bigrams 0.9411 on news4; the most
  frequent terms instead of chi-squared lost 0.3 points);
- Adam, lr 1e-3 constant, batch 64, 10 epochs, Glorot init (gain 1): news4 0.9451-0.9465 and agnews7600
  0.9033-0.9072 over seeds 0-4. The best SGD setting (momentum 0.9, batch 16, lr 0.15 decayed linearly,
  gain 4) reached news4 0.9411 but agnews7600 only 0.8928 (lr 0.075: 0.8963 there, 0.9403 on news4);
  weight decay, input dropout, label smoothing and weight averaging did not help either optimizer.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from dataclasses import dataclass
from typing import Any

from textclf.errors import SettingsError

BACKENDS = ("auto", "xla", "pallas")
VECTORIZERS = ("tfidf", "hashing")
FEATURE_SELECTIONS = ("chi2", "frequency")
LR_SCHEDULES = ("linear", "constant", "cosine")
AUGMENTATIONS = ("shift", "flip")
OPTIMIZERS = ("adam", "sgd")
PALLAS_INPUTS = ("auto", "dense", "sparse", "pieces")
SEARCHES = ("auto", "fresh", "off")
PARALLELS = ("auto", "data", "features")
FEATURES_NEED_XLA = (
    "--parallel features trains with the XLA step: pass --backend xla (or --parallel data for the Pallas kernels)"
)
# The fields the model search (textclf/training/search/) may choose; a field named in `pinned` keeps its value.
SEARCHED_FIELDS = (
    "stop_words",
    "ngram_max",
    "nb_weighting",
    "sublinear_tf",
    "learning_rate",
    "weight_decay",
    "epochs",
    "batch_size",
    "ensemble",
    "char_ngrams",
    "char_learning_rate",
    "char_epochs",
    "family",
    "linear_learning_rate",
    "linear_weight_decay",
    "linear_epochs",
)
MODELS = ("mlp", "cnn")
# The text model's families: "network" (features -> hidden (sigmoid) -> classes), "linear" (features -> classes,
# trained on LINEAR_LOSSES) or "network+linear" (the network's scores plus a linear model's on the words,
# textclf/models/weights.py). The search chooses among them unless one is typed.
FAMILIES = ("network", "linear", "network+linear")
# A linear model's loss: "log", cross-entropy (softmax; a sigmoid a label for label sets), or "squared_hinge",
# one-vs-rest squared hinge (as scikit-learn's LinearSVC; not the default: docs/decisions.md, "The linear models'
# loss").
LINEAR_LOSSES = ("log", "squared_hinge")
MULTI_LABEL_METRICS = ("micro-f1", "macro-f1", "samples-f1")


# Settings whose default depends on the model, filled in when left at None (Settings.__post_init__). Measured:
# the text MLP peaks within 10 epochs at a constant rate; the CNN reached Fashion-MNIST test accuracy 0.9294
# with 20 epochs, cosine decay, dropout 0.25 and shifts, but 0.909-0.917 with 10 epochs (BENCHMARKS.md).
MODEL_DEFAULTS = {"mlp": {"epochs": 10, "lr_schedule": "constant"}, "cnn": {"epochs": 20, "lr_schedule": "cosine"}}


def _channel_list_ok(text: str) -> bool:
    parts = [p.strip() for p in str(text).split(",")]
    return 1 <= len(parts) <= MAX["conv_layers"] and all(p.isdigit() and 1 <= int(p) <= MAX["channels"] for p in parts)


# Upper bounds of the numeric settings, the same for the CLI, the estimator and the service's jobs: far beyond any
# run that fits a machine, low enough that a typo (epochs 10**30, hidden 10**9) is refused by name instead of
# holding the job queue for good or failing inside JAX.
MAX = {
    "features": 2**22,
    "hidden": 16_384,
    "weights": 2**30,  # weights: features x hidden, 4 GiB of float32
    "epochs": 10_000,
    "batch_size": 2**20,
    "min_steps": 10**8,
    "min_df": 10**9,
    "ensemble": 64,
    "search_steps": 10**12,
    "search_budget": 7 * 86_400.0,
    "max_file_mb": 2.0**20,
    "devices": 4_096,
    "seed": 2**32 - 1,
    "conv_kernel": 31,
    "conv_layers": 16,
    "channels": 4_096,
    "learning_rate": 100.0,
    "init_gain": 100.0,
    "weight_decay": 100.0,
}


def _within(value, low, high, inclusive_low: bool = True) -> bool:
    """low <= value <= high (low < value where not inclusive_low), NaN and infinities refused."""
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return (low <= value if inclusive_low else low < value) and value <= high


def spelled_out(given: dict) -> dict:
    """The values a user spells as words, as Settings holds them: stop_words "none" (any case) is None, augment
    "none" is "". One rule for every face (the CLI, the estimator, the HTTP job API)."""
    given = dict(given)
    if isinstance(given.get("stop_words"), str) and given["stop_words"].lower() == "none":
        given["stop_words"] = None
    if given.get("augment") == "none":
        given["augment"] = ""
    return given


def option(default, help_text: str, *, flag: str | None = None, kind: type | None = None):
    """A setting the command line offers, as a field: its default, its --help text ("{default}" and "{cnn}" stand for
    the value for text and for image models), its flag where it is not the field's name, and the type the flag
    reads where it is not the field's (the command line's options are built from these: command_line_options)."""
    return dataclasses.field(default=default, metadata={"help": help_text, "flag": flag, "kind": kind})


@dataclass(frozen=True)
class VectorizerSettings:
    """How documents become columns: the bag of words, its terms and weights, the character view."""

    # width of the bag of words fed to the network
    features: int = option(32754, "Bag-of-words width (default {default}).")
    # "tfidf": fitted vocabulary; "hashing": no vocabulary, any corpus size
    vectorizer: str = option("tfidf", "tfidf (fitted vocabulary) or hashing (default {default}).")
    feature_selection: str = "chi2"  # how "tfidf" picks `features` terms from the full vocabulary
    # 1 = unigrams, 2 = unigrams + bigrams
    ngram_max: int = option(2, "Longest word n-gram (default {default}; searched).", flag='ngrams')
    stop_words: str | None = option("english", "'english' or 'none' (default {default}; searched).")
    min_df: int = 2  # ignored (set to 1) for corpora under 200 documents, where it would empty the vocabulary
    # 1 + log(tf): long posts do not drown short ones
    sublinear_tf: bool = option(True, "Weigh term counts as 1 + log(tf) (default on; searched).")
    # Scale each column by its naive Bayes log-count ratio (NBSVM, pipelines.vectorize.nb_ratios). Searched; on
    # by default because the search chose it by validation on all five benchmark corpora on the GPU
    # (BENCHMARKS.md, "Accuracy"), so a budget that affords only the first candidates tries it first.
    nb_weighting: bool = option(True, "Scale each column by its naive Bayes log-count ratio (default on; searched).")
    # A second network on character 2-5-grams (pipelines.vectorize.CHAR_NGRAM_RANGE, `features` columns of their
    # own, weighted as the words are), averaged with the word network(s) in one model file ("tfidf" only). Off
    # unless the search chooses it by validation (textclf/training/search/halving.py, _choose_networks) or it is typed:
    # it doubles the model and its training, and it pays where words alone are few (short sentences).
    char_ngrams: bool = option(
        False, "A second network on character 2-5-grams, averaged with the words' (default: the search decides)."
    )
    # The character network's learning rate and epochs; 0: the words' (learning_rate, epochs). The search reads
    # them off the character network's own validation curves on a GPU.
    char_learning_rate: float = 0.0
    char_epochs: int = 0
    # Every document's words open with a marker word, so that bigrams tell the first word apart
    # (pipelines.vectorize.START_TOKEN has the measurement). Not searched: it never lost by validation.
    start_token: bool = option(
        True, "Open every document with a marker word, so bigrams see its first word (default on)."
    )
    # Each character of Chinese, Japanese, Thai, Lao, Khmer and Myanmar text is a word of its own: these scripts put
    # no spaces between words, and scikit-learn's token pattern made one token of a whole clause
    # (pipelines.word_counts.UNSPACED_RANGES has the measurements). Off: such runs stay whole, as in text already split
    # into words by a segmenter. Not searched.
    unspaced_as_characters: bool = option(
        True,
        "Each character of Chinese, Japanese, Thai, Lao, Khmer or Myanmar text a word of its own; off for text "
        "already split into words (default on).",
    )

    def _vectorizer_checks(self) -> list[tuple[bool, str]]:
        return [
            (_within(self.features, 2, MAX["features"]), f"features must be 2 to {MAX['features']:,}"),
            (self.vectorizer in VECTORIZERS, f"vectorizer must be one of {', '.join(VECTORIZERS)}"),
            (
                self.feature_selection in FEATURE_SELECTIONS,
                f"feature_selection must be one of {', '.join(FEATURE_SELECTIONS)}",
            ),
            (self.ngram_max in (1, 2, 3), "ngram_max must be 1, 2 or 3"),
            (
                self.stop_words in (None, "english"),
                "stop_words must be 'english' or 'none' (English is the list "
                "shipped; for another language pass 'none')",
            ),
            (_within(self.min_df, 1, MAX["min_df"]), f"min_df must be 1 to {MAX['min_df']:,}"),
            (
                _within(self.char_learning_rate, 0, MAX["learning_rate"]),
                f"char_learning_rate must be 0 (the learning rate's) to {MAX['learning_rate']:g}",
            ),
            (_within(self.char_epochs, 0, MAX["epochs"]), f"char_epochs must be 0 (the epochs') to {MAX['epochs']:,}"),
            (
                not (self.char_ngrams and self.vectorizer != "tfidf"),
                "char_ngrams needs the tfidf vectorizer: pass --vectorizer tfidf or --no-char-ngrams",
            ),
        ]


@dataclass(frozen=True)
class NetworkSettings:
    """The network: the text MLP or the image CNN, its width, and how many side by side."""

    # Model: "mlp" (text: features -> hidden (sigmoid) -> classes (softmax)) or "cnn" (images:
    # textclf/models/cnn.py, conv+ReLU+pool per entry of conv_channels, then a ReLU layer of `hidden` units).
    model: str = option("mlp", "mlp (text) or cnn (images: folder of label folders or an IDX folder).")
    # cnn only: output channels of each conv layer, comma-separated
    conv_channels: str = option("32,64", "cnn: channels of each conv layer (default {default}).")
    # cnn only: odd kernel size ("same" padding)
    conv_kernel: int = option(5, "cnn: conv kernel size, odd (default {default}).")
    # cnn only: dropout on the fully connected layer and random changes to each training image per step
    # ("shift": up to 2 px each way; "flip": mirror left-right, only for classes that look alike mirrored).
    # Chosen on Fashion-MNIST (BENCHMARKS.md); the text MLP measured no gain from dropout.
    dropout: float = option(0.25, "cnn: dropout on the dense layer (default {default}).")
    # comma-separated AUGMENTATIONS, or "" for none
    augment: str = option("shift", "cnn: shift, flip, shift,flip or none (default {default}).")
    hidden: int = option(128, "Hidden units (sigmoid) of the network family (default {default}).")
    # FAMILIES; the linear family has no hidden layer (`hidden` is then unused)
    family: str = option(
        "network",
        "network (a hidden layer), linear (features straight to classes) or network+linear (the network's scores plus"
        " a linear model's) (default: the search chooses by validation; network when the search is off).",
    )
    # The linear model beside the network (family "network+linear"): its learning rate, weight decay and epochs;
    # 0, None, 0: the network's. The search reads them off the linear models' validation curves.
    linear_learning_rate: float = 0.0
    linear_weight_decay: float | None = None
    linear_epochs: int = 0
    # LINEAR_LOSSES, of the linear family's model and of the one beside a network
    linear_loss: str = option(
        "log",
        "A linear model's loss: log (softmax; a sigmoid a label for label sets) or squared_hinge (one-vs-rest, as "
        "LinearSVC) (default log).",
    )
    # Networks trained side by side on the same batches and averaged into one model file (textclf/training/
    # ensembles.py, fit_ensemble): 1 = one network; 0 = the search decides between 1 and
    # SearchRules.ensemble_members by validation where it is cheap (a GPU), else 1.
    ensemble: int = option(
        0, "Networks trained side by side and averaged into one model (default: the search tries 1 and 5 on a GPU)."
    )

    @property
    def units(self) -> int:
        """Hidden units of the text model: 0 for the linear family (textclf/models/weights.py, is_linear)."""
        return 0 if self.family == "linear" else self.hidden

    @property
    def channels(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.conv_channels.split(","))

    @property
    def augmentations(self) -> tuple[str, ...]:
        return tuple(p.strip() for p in str(self.augment).split(",") if p.strip())

    def _network_checks(self) -> list[tuple[bool, str]]:
        return [
            (_within(self.hidden, 1, MAX["hidden"]), f"hidden must be 1 to {MAX['hidden']:,}"),
            (self.model in MODELS, f"model must be one of {', '.join(MODELS)}"),
            (self.family in FAMILIES, f"family must be one of {', '.join(FAMILIES)}"),
            (
                not (self.family != "network" and self.model == "cnn"),
                f"family {self.family} is a text model: drop --family for --model cnn",
            ),
            (
                _within(self.linear_learning_rate, 0, MAX["learning_rate"]),
                f"linear_learning_rate must be 0 (the learning rate's) to {MAX['learning_rate']:g}",
            ),
            (
                self.linear_weight_decay is None or _within(self.linear_weight_decay, 0, MAX["weight_decay"]),
                f"linear_weight_decay must be none (the weight decay's) or 0 to {MAX['weight_decay']:g}",
            ),
            (
                _within(self.linear_epochs, 0, MAX["epochs"]),
                f"linear_epochs must be 0 (the epochs') to {MAX['epochs']:,}",
            ),
            (self.linear_loss in LINEAR_LOSSES, f"linear_loss must be one of {', '.join(LINEAR_LOSSES)}"),
            (
                _within(self.conv_kernel, 1, MAX["conv_kernel"]) and self.conv_kernel % 2 == 1,
                f"conv_kernel must be odd, 1 to {MAX['conv_kernel']}",
            ),
            (
                _channel_list_ok(self.conv_channels),
                f"conv_channels must be 1 to {MAX['conv_layers']} comma-separated whole numbers, 1 to "
                f"{MAX['channels']:,}",
            ),
            (_within(self.dropout, 0, 1) and self.dropout < 1, "dropout must be in [0, 1)"),
            (
                all(a in AUGMENTATIONS for a in self.augmentations),
                f"augment must be comma-separated names from {', '.join(AUGMENTATIONS)} (or empty)",
            ),
            (_within(self.ensemble, 0, MAX["ensemble"]), "ensemble must be 0 (chosen by the search) to 64 networks"),
        ]


@dataclass(frozen=True)
class OptimizerSettings:
    """How the network trains: the optimizer, its rates, the batches, the epochs, the seed."""

    # Optimizer: Adam (default) or minibatch SGD with momentum (v <- m v + g + wd w; w <- w - lr v).
    optimizer: str = option("adam", "adam or sgd (default {default}).")
    batch_size: int = option(64, "Minibatch size (default {default}; searched).")
    # None: the model's default (MODEL_DEFAULTS: 10 for mlp, 20 for cnn)
    epochs: int | None = option(None, "Passes over the training set (default {default}, searched; cnn {cnn}).")
    # Small corpora get extra epochs until training makes at least this many optimizer steps: 8 epochs of a
    # 36-document corpus would be 8 steps, far too few to learn anything. Not when "epochs" is pinned (typed).
    min_steps: int = 300
    learning_rate: float = option(0.001, "Learning rate (default {default}; searched).", flag='lr')
    # "constant", or "linear" / "cosine" decay to 0 over the run (linear best for sgd: lr 0.15, batch 16);
    # None: the model's default (constant for mlp, cosine for cnn).
    lr_schedule: str | None = option(None, "constant, or linear or cosine decay to 0 (default {default}; cnn {cnn}).")
    # sgd only
    momentum: float = option(0.9, "SGD momentum (default {default}).")
    # Glorot-uniform range multiplier (4 suited sgd)
    init_gain: float = option(1.0, "Glorot init range multiplier (default {default}).")
    weight_decay: float = option(0.0, "L2 weight decay (default {default}; searched).")
    seed: int = option(
        0, "Seed for the validation split and the model's initialisation and shuffling (default {default})."
    )

    def epochs_for(self, n_train: int) -> int:
        """Epochs actually run on n_train documents: `epochs`, raised to reach `min_steps` steps, unless the user
        typed the epoch count (a value the user typed is never rewritten; pinned: SearchSettings)."""
        if "epochs" in self.pinned:
            return self.epochs
        steps_per_epoch = -(-n_train // self.batch_size)
        return max(self.epochs, -(-self.min_steps // steps_per_epoch))

    def _optimizer_checks(self) -> list[tuple[bool, str]]:
        return [
            (_within(self.batch_size, 1, MAX["batch_size"]), f"batch_size must be 1 to {MAX['batch_size']:,}"),
            (_within(self.epochs, 1, MAX["epochs"]), f"epochs must be 1 to {MAX['epochs']:,}"),
            (_within(self.min_steps, 0, MAX["min_steps"]), f"min_steps must be 0 to {MAX['min_steps']:,}"),
            (
                _within(self.learning_rate, 0, MAX["learning_rate"], inclusive_low=False),
                f"learning_rate must be > 0 and at most {MAX['learning_rate']:g}",
            ),
            (self.lr_schedule in LR_SCHEDULES, f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}"),
            (self.optimizer in OPTIMIZERS, f"optimizer must be one of {', '.join(OPTIMIZERS)}"),
            (
                _within(self.init_gain, 0, MAX["init_gain"], inclusive_low=False),
                f"init_gain must be > 0 and at most {MAX['init_gain']:g}",
            ),
            (_within(self.momentum, 0, 1) and self.momentum < 1, "momentum must be in [0, 1)"),
            (_within(self.weight_decay, 0, MAX["weight_decay"]), f"weight_decay must be 0 to {MAX['weight_decay']:g}"),
            (_within(self.seed, 0, MAX["seed"]), f"seed must be 0 to {MAX['seed']:,}"),
        ]


@dataclass(frozen=True)
class DataSettings:
    """The documents: the validation share, label sets and what judges them, the largest file read."""

    validation_fraction: float = 0.1  # used only when no separate test corpus is given
    # Documents with any number of labels (pipelines/labels.py): sigmoid outputs, binary cross-entropy and a
    # threshold chosen on held-out documents. None: as the corpus holds them (any document with other than one
    # label makes it multi-label); True / False as the user says (False refuses a corpus of label sets).
    multi_label: bool | None = option(
        None,
        "Documents with any number of labels: sigmoid outputs and a threshold chosen on held-out documents (default: "
        "when any document has other than one label; --no-multi-label refuses such a corpus).",
    )
    # What a multi-label model is judged by: its threshold and early stopping maximise it on held-out documents.
    # None: micro-F1. Refused for a corpus of one label a document (judged by accuracy).
    metric: str | None = option(
        None,
        "Multi-label: what the threshold and early stopping maximise on held-out documents: micro-f1, macro-f1 or "
        "samples-f1 (default micro-f1).",
    )
    # larger files are skipped (corpus) or refused (predict)
    max_file_mb: float = option(10.0, "Skip corpus files larger than this (default {default}).")

    def _data_checks(self) -> list[tuple[bool, str]]:
        return [
            (self.multi_label in (None, True, False), "multi_label must be true, false or none (from the corpus)"),
            (self.metric in (None, *MULTI_LABEL_METRICS), f"metric must be one of {', '.join(MULTI_LABEL_METRICS)}"),
            (
                _within(self.validation_fraction, 0, 1, inclusive_low=False) and self.validation_fraction < 1,
                "validation_fraction must be in (0, 1)",
            ),
            (
                _within(self.max_file_mb, 0, MAX["max_file_mb"], inclusive_low=False),
                f"max_file_mb must be > 0 and at most {MAX['max_file_mb']:,.0f}",
            ),
        ]


@dataclass(frozen=True)
class DeviceSettings:
    """Where and how it runs: the backend, the Pallas input format, the devices and how they share it."""

    # "auto": the step training/backends.py picks for the network and batch on a GPU, else xla
    backend: str = option("auto", "auto, xla or pallas (GPU) (default {default}).")
    # Pallas input format: "dense" (X scattered into a bf16 matrix), "pieces" (fixed-width pieces of each
    # document's nonzeros, pallas_kernels/pieces_hidden.py) or "sparse" (flat nonzeros, sparse_hidden.py);
    # "auto": pieces from PIECES_MIN_BATCH documents a device batch up, dense below (textclf/training/steps/step.py).
    pallas_input: str = option("auto", "Pallas input format: auto, dense, pieces or sparse (default {default}).")
    # Devices of this process that train one network; with several processes every process uses this many.
    # 0 ("auto"): as the training plan measured (textclf/training/plan.py, device_layout): one GPU on one host (a
    # split trained slower end to end), and with several processes the batch split only where each device gets
    # 8,192 documents.
    devices: int = option(0, "Devices of this process that split each batch: N or all (default all).", kind=str)
    # How several devices share the network (textclf/training/parallel/features.py): "data" (each device a slice of
    # every batch, W1 whole on each, its gradient summed every step), "features" (W1's rows split across one
    # process's devices, each on the whole batch; the XLA step), "auto": as the plan measured.
    parallel: str = option(
        "auto", "How several devices share the network: data, features (W1 split by rows) or auto (default {default})."
    )

    def _device_checks(self) -> list[tuple[bool, str]]:
        return [
            (self.backend in BACKENDS, f"backend must be one of {', '.join(BACKENDS)}"),
            (
                _within(self.devices, 0, MAX["devices"]),
                f"devices must be 0 (as the plan measured) to {MAX['devices']:,}",
            ),
            (self.parallel in PARALLELS, f"parallel must be one of {', '.join(PARALLELS)}"),
            (not (self.parallel == "features" and self.backend == "pallas"), FEATURES_NEED_XLA),
            (self.pallas_input in PALLAS_INPUTS, f"pallas_input must be one of {', '.join(PALLAS_INPUTS)}"),
        ]


@dataclass(frozen=True)
class SearchSettings:
    """The model search: whether it runs and the work or time it may spend; the fields the user typed."""

    # Model search (textclf/training/search/halving.py): "auto" chooses SEARCHED_FIELDS by validation on the training
    # documents (text MLP with the tfidf vectorizer; skipped below its minimum corpus size), or takes the choice
    # recorded for the same documents, settings and device (textclf/runs/search.py); "fresh" searches even
    # then; "off" uses the values here as they are. search_steps: the work the search may spend, in network-steps
    # (0: the device's default, search.default_budget_steps), so the same corpus and seed choose alike on a busy or
    # an idle machine; search_budget: a wall-clock bound in seconds, only where the user asks for one (0: none;
    # given alone, it replaces the default work bound).
    search: str = option(
        "auto",
        "auto: choose stop words, n-grams, NB weights, sublinear tf, learning rate, weight decay, epochs, batch size,"
        " an ensemble, a character network and the model family by validation on the training corpus (options you set"
        " are kept), or reuse the choice a run of the same documents, settings and device recorded; fresh: search "
        "even then; off: use the settings as given (default auto).",
    )
    search_steps: int = option(
        0,
        "Work the search may spend, in network-steps (default: 20,000 on a CPU, 2,000,000 on a GPU): the same corpus "
        "and seed choose the same model on a busy or an idle machine.",
    )
    search_budget: float = option(
        0.0,
        "Seconds the search may take, where you want a clock to bound it (default: none; alone, it replaces the "
        "default --search-steps).",
    )
    # Seeds the search's folds, batches and candidate networks (the run's `seed` seeds the model it trains): runs that
    # differ only in `seed` make the same choice, so a recorded search serves them all (runs/search.py).
    search_seed: int = option(
        0,
        "Seed for the model search's folds and candidates (default {default}): runs that differ only in --seed share "
        "one search.",
    )
    # Fields the user set explicitly (the CLI fills it in from the options given): the search keeps them.
    pinned: tuple[str, ...] = ()

    def _search_checks(self) -> list[tuple[bool, str]]:
        return [
            (self.search in SEARCHES, f"search must be one of {', '.join(SEARCHES)}"),
            (
                _within(self.search_steps, 0, MAX["search_steps"]),
                f"search_steps must be 0 (the device's default) to {MAX['search_steps']:,} network-steps",
            ),
            (
                _within(self.search_budget, 0, MAX["search_budget"]),
                f"search_budget must be 0 (no clock limit) to {MAX['search_budget']:,.0f} seconds",
            ),
            (_within(self.search_seed, 0, MAX["seed"]), f"search_seed must be 0 to {MAX['seed']:,}"),
            (
                all(p in SEARCHED_FIELDS for p in self.pinned),
                f"pinned must name fields among {', '.join(SEARCHED_FIELDS)}",
            ),
        ]


@dataclass(frozen=True)
class Settings(SearchSettings, DeviceSettings, DataSettings, OptimizerSettings, NetworkSettings, VectorizerSettings):
    """Every training setting as one frozen record, saved with every run and every model file (old records and
    files read as before: to_dict/from_dict see one flat set of fields), composed of the parts above, each
    with its own fields and checks."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "pinned", tuple(self.pinned))  # from JSON it arrives as a list
        for name, value in MODEL_DEFAULTS.get(self.model, {}).items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)  # frozen: the one place a field is filled in
        weights = (
            self.features * self.hidden <= MAX["weights"],  # the one check across two parts
            f"features x hidden must be at most {MAX['weights']:,} weights (4 GiB): lower --features or --hidden",
        )
        checks = [
            *self._vectorizer_checks(),
            *self._network_checks(),
            weights,
            *self._optimizer_checks(),
            *self._data_checks(),
            *self._device_checks(),
            *self._search_checks(),
        ]
        for ok, message in checks:
            if not ok:
                raise SettingsError(f"invalid setting: {message}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Settings":
        """Rebuild from a stored dict; unknown keys (from a newer textclf) are ignored, missing ones default."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def from_user(cls, data: Any) -> "Settings":
        """Settings a user gave as a mapping (the HTTP job API, JSON): every key must name a field, every value
        must have the field's type (1.5 epochs or "abc" are refused, never rounded or dropped: a value the user
        typed is never silently rewritten), and the searched fields given are pinned, as typed CLI options are.
        Raises SettingsError naming the key and the fix."""
        from pydantic import ValidationError

        if not isinstance(data, dict):
            raise SettingsError("settings must be a JSON object of setting names and values")
        unknown = sorted(set(data) - set(_user_fields()))
        if unknown:
            raise SettingsError(f"unknown setting '{unknown[0]}': use one of {', '.join(_user_fields())}")
        try:
            given = _user_settings_model().model_validate(spelled_out(data)).model_dump(exclude_unset=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(part) for part in first["loc"])
            raise SettingsError(f"setting '{key}': {first['msg'].lower()} (got {first.get('input')!r})") from None
        # null epochs / lr_schedule mean "the model's default", not a typed value; null stop_words means none.
        pinned = tuple(
            name for name in SEARCHED_FIELDS if name in given and (given[name] is not None or name == "stop_words")
        )
        return cls(**given, pinned=pinned)

    def char_view(self) -> "Settings":
        """The settings the character network trains with (char_ngrams): its own learning rate and epochs where
        set, else the words'."""
        return self.replace(
            learning_rate=self.char_learning_rate or self.learning_rate, epochs=self.char_epochs or self.epochs
        )

    def linear_view(self) -> "Settings":
        """The settings the linear model beside the network trains with (family "network+linear"): one linear
        model on the words, its own learning rate, weight decay and epochs where set, else the network's."""
        decay = self.weight_decay if self.linear_weight_decay is None else self.linear_weight_decay
        return self.replace(
            family="linear",
            learning_rate=self.linear_learning_rate or self.learning_rate,
            weight_decay=decay,
            epochs=self.linear_epochs or self.epochs,
            ensemble=1,
            char_ngrams=False,
        )

    def replace(self, **changes: Any) -> "Settings":
        """A copy with `changes`; the rest keep this instance's values, model-dependent ones included (to move
        an mlp Settings to model="cnn" with the cnn defaults, build a fresh Settings(model="cnn", ...))."""
        return dataclasses.replace(self, **changes)


class CommandLineOption(typing.NamedTuple):
    flag: str  # --flag-name, with "-" for "_"
    field: str  # the Settings field it sets
    kind: type  # what typer reads (a flag left out: None)
    help: str


@functools.cache
def command_line_options() -> tuple[CommandLineOption, ...]:
    """Every setting the command line offers (the fields made with `option`), part by part: its flag, field, the
    type typer reads and its --help text with the text and image models' defaults filled in."""
    hints = typing.get_type_hints(Settings)
    text, image = Settings(), Settings(model="cnn")
    found = []
    for field in dataclasses.fields(Settings):  # the parts' fields, part by part
        if "help" not in field.metadata:
            continue
        kind = field.metadata["kind"] or next(
            (t for t in typing.get_args(hints[field.name]) if t is not type(None)), hints[field.name]
        )
        help_text = field.metadata["help"].format(default=getattr(text, field.name), cnn=getattr(image, field.name))
        found.append(
            CommandLineOption(field.metadata["flag"] or field.name, field.name, typing.Optional[kind], help_text)
        )
    return tuple(found)


def _user_fields() -> list[str]:
    return [f.name for f in dataclasses.fields(Settings) if f.name != "pinned"]


@functools.cache
def _user_settings_model():
    """A strict pydantic model of the fields users set (Settings.from_user): no coercion between types, except
    whole numbers for float fields (JSON writes 1.0 as 1)."""
    from pydantic import ConfigDict, create_model

    hints = typing.get_type_hints(Settings)
    fields = {name: (hints[name], None) for name in _user_fields()}
    return create_model("UserSettings", __config__=ConfigDict(extra="forbid", strict=True), **fields)
