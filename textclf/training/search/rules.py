"""The model search's rules as data: one frozen record, passed in, never patched.

Each field bounds one decision of the search (halving.py beside it) or of the training it plans; the comment
says what it bounds and why, and names the BENCHMARKS.md section or the docs/decisions.md entry that measured it. A
benchmark tries another value with `dataclasses.replace(SearchRules(), field=value)`. No JAX, no I/O.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SearchRules:
    # Which corpora are searched.
    min_documents: int = 60  # fewer training documents: not searched (defaults lose worse; "Small corpora")
    # The candidates: the first portfolio_size variants of the portfolio (portfolio.json beside this module, ordered
    # by an offline study over many corpora: benchmarks/search/portfolio.py), with the fields a user set kept.
    portfolio_size: int = 7
    learning_rates: tuple[float, ...] = (0.001, 0.003, 0.01)  # Adam's rates tried side by side in each round
    weight_decays: tuple[float, ...] = (0.0, 1e-4)  # coupled L2 tried beside each rate where networks are cheap (GPU)
    ensemble_members: int = 5  # networks of the ensemble tried against one on a GPU ("What the search's choices ...")
    # The linear family, tried against the chosen network (textclf/training/search/family.py): Adam's rates and the
    # L2 strengths (coupled weight decay) over four orders of magnitude, side by side, each with its best epoch.
    # Most epochs its models train (a patience stops them sooner); K*C columns cost a fraction of a network's epoch.
    linear_rates: tuple[float, ...] = (0.01, 0.03, 0.1)
    linear_decays: tuple[float, ...] = (0.0, 1e-5, 3e-5, 1e-4, 3e-4)
    linear_max_epochs: int = 30
    # On a CPU, where a step's cost grows with the K*C columns and its epochs cost seconds: fewer pairs, fewer epochs.
    cpu_linear_rates: tuple[float, ...] = (0.03, 0.1)
    cpu_linear_decays: tuple[float, ...] = (0.0, 3e-5, 1e-4)
    cpu_linear_max_epochs: int = 15
    # The network, the default family, is kept unless the linear family beats it by more than this many binomial
    # standard errors of its validation score (as the defaults' variant is kept: default_variant_errors).
    family_errors: float = 1.0
    # ... and is tried only on this many validation documents or more: on fewer, one standard error is over 1.3
    # points, beyond the linear family's lead on any corpus measured (webkb +1.46 on 2,803).
    family_min_validation: int = 1000
    # A linear model beside the network ("network+linear") wins on a mean gain over the network above this many
    # standard errors of the gain, paired per validation document (as more networks do: networks_errors).
    mixed_errors: float = 0.0
    # The rounds, successive halving: every variant on the first fold for first_rung of a round's epochs; the
    # halving_keep best (and the settings' own variant) go on, to all the epochs on every fold: a short first rung
    # ranks the variants nearly as the whole rounds do, for a fraction of their steps (docs/decisions.md, "A
    # portfolio raced by successive halving").
    first_rung: float = 1 / 3
    halving_keep: int = 2
    patience: int = 3  # a round stops after this many epochs without a gain of any of its networks
    patience_steps: int = 100  # ... and at least this many optimizer steps ("Small corpora")
    max_epochs: int = 40  # most epochs a GPU round trains ("English corpora": 40 against 20)
    cpu_max_epochs: int = 10  # most epochs a CPU round trains (an epoch there costs seconds)
    round_min_steps: int = 300  # a small corpus's round trains at least this many steps ("Small corpora")
    round_features: int = 8192  # columns the rounds train on: a step costs Adam's pass over W1 ("Accuracy")
    round_cap_headroom: float = 1.25  # GPU batches cut this much wider than the first rung's densest (one compilation)
    gpu_score_batch: int = 1024  # validation rows scored a step on a GPU (no gradient)
    # The folds.
    search_documents: int = 20_000  # a GPU's folds cover at most this many documents ("Big corpora with no flags")
    cpu_folds_documents: int = 8000  # a CPU searches up to this many documents on 3 folds, more on one split
    cpu_train_documents: int = 4000  # a CPU's one split trains on at most this many documents ...
    cpu_validation_documents: int = 3000  # ... and validates on at most this many ("CPU")
    # The budget: work, not seconds, so a busy machine chooses as an idle one does ("The search's budget").
    cpu_budget_steps: int = 20_000  # network-steps a CPU's search may spend
    gpu_budget_steps: int = 2_000_000  # network-steps a GPU's search may spend (above every benchmark corpus's)
    # Choosing among candidates.
    default_variant_errors: float = 1.0  # the defaults' variant is kept within this many standard errors ("CPU")
    networks_errors: float = 0.0  # more networks (ensemble, character pair) only on a gain above this many errors
    near_rate_errors: float = 2.0  # a sampled corpus's final training retries rates this near the winner
    max_rate_candidates: int = 3  # ... at most this many of them
    rate_choice_features: int = 8192  # columns those rate candidates train on ("The rate choice on 8,192 columns")
    # The networks trial (ensemble, character view).
    cpu_trial_steps: int = 4000  # a CPU tries more networks only where the final training is this many steps or fewer
    char_max_characters: int = 4_000_000  # the character view is tried on searched texts of at most this many
    # Scaling the choice to a corpus larger than the search's sample.
    epoch_steps: int = 4096  # the batch doubles until an epoch holds at most this many steps ("Big corpora")
    max_batch_for_all: int = 4096  # ... but not past this batch

    def replace(self, **changes: Any) -> "SearchRules":
        return dataclasses.replace(self, **changes)

    def linear_pairs(self, platform: str) -> list[tuple[float, float]]:
        """The (learning rate, weight decay) pairs of the family trial's linear models on this platform."""
        cpu = platform == "cpu"
        return [
            (rate, decay)
            for rate in (self.cpu_linear_rates if cpu else self.linear_rates)
            for decay in (self.cpu_linear_decays if cpu else self.linear_decays)
        ]

    def linear_epochs(self, platform: str) -> int:
        """The most epochs the family trial's linear models train on this platform."""
        return self.cpu_linear_max_epochs if platform == "cpu" else self.linear_max_epochs

    def budget_steps(self, platform: str) -> int:
        """The network-steps a search may spend on this platform when the user set no budget."""
        return self.cpu_budget_steps if platform == "cpu" else self.gpu_budget_steps
