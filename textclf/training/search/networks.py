"""The model search's networks trial (textclf/training/search/halving.py runs it after the rounds): an ensemble of the
chosen network, or a second network on character n-grams, against one network, on the compared folds."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from pipelines.batches import batch_shape, buckets_for, cut_order
from pipelines.vectorize import count_chars
from textclf.settings import Settings
from textclf.training.search.rounds import (
    RoundData,
    fit_candidates,
    precompile_epoch,
    precompile_hits,
    precompile_scores,
    round_data,
)
from textclf.training.search.folds import (
    RoundGeometry,
    SearchContext,
    SearchCorpus,
    Variant,
    char_fold_matrices,
    final_steps,
)
from textclf.training.search.rounds import fold_round
from textclf.training.search.summary import NetworksSummary


class NetworksTrial:
    """How many networks, and whether a second one reads character n-grams, for the chosen candidate on the
    compared folds:
    - on a GPU, rules.ensemble_members copies of the chosen network trained side by side (different
      initialisations): their average against the members' mean accuracy;
    - one network on the character view (char_fold_matrices), its scores added to each word network's: the
      pairs' mean accuracy against the members' (the same word networks, so the comparison is paired).
    The most accurate option wins, the pair and the ensemble only where their mean gain over one network is above
    rules.networks_errors standard errors of it, a tie keeping fewer networks (one, then the pair, then the
    ensemble). The character view is tried where Settings.char_ngrams is not pinned and the searched texts hold
    at most rules.char_max_characters."""

    def __init__(
        self,
        search: SearchContext,
        corpus: SearchCorpus,
        geometry: RoundGeometry,
        chosen: Settings,
        shared_folds: list[int],
    ):
        self.search, self.corpus, self.geometry, self.chosen, self.folds = (
            search,
            corpus,
            geometry,
            chosen,
            shared_folds,
        )
        rules, characters = search.rules, sum(map(len, corpus.texts))
        self.try_chars, self.why_not = "char_ngrams" not in chosen.pinned, "set explicitly"
        if self.try_chars and characters > rules.char_max_characters:
            self.try_chars = False
            self.why_not = f"{characters:,} characters searched, over {rules.char_max_characters:,}"
        # The character network's learning rate and epochs: on a GPU read off its own validation curves (its
        # rates side by side, as a round's), on a CPU the words' (each rate there costs a network's time again).
        # A typed rate or epoch count holds for it too.
        self.own_settings = search.platform != "cpu"
        self.char_rates = (
            [chosen.learning_rate]
            if not self.own_settings or "learning_rate" in chosen.pinned
            else list(rules.learning_rates)
        )

    def _cost(self, networks: int, searched_epochs: int, char_epochs: int, unit_seconds: float) -> tuple[int, float]:
        """(network-steps, seconds) of `networks` word networks and the character trial if any."""
        network_epochs = networks * searched_epochs + (len(self.char_rates) * char_epochs if self.try_chars else 0)
        fold_steps = sum(-(-len(self.corpus.folds[f][0]) // self.chosen.batch_size) for f in self.folds)
        fold_documents = sum(len(self.corpus.folds[f][0]) for f in self.folds)
        return network_epochs * fold_steps, unit_seconds * network_epochs * fold_documents

    def choose(self, searched_epochs: int, unit_seconds: float) -> Networks:
        """searched_epochs: the epoch count read off the folds' curves; unit_seconds: what the rounds took per
        (network, epoch, training document), for a clock budget."""
        search, chosen, rules = self.search, self.chosen, self.search.rules
        work = final_steps(chosen, self.corpus.n_documents)
        if search.platform == "cpu" and work > rules.cpu_trial_steps:
            return Networks(
                1,
                chosen.char_ngrams,
                chosen.char_learning_rate,
                chosen.char_epochs,
                NetworksSummary(
                    1,
                    reason=f"not tried on a CPU: {work:,} steps (batches x epochs) to "
                    f"train, over {rules.cpu_trial_steps:,}",
                ),
            )
        char_epochs = searched_epochs if not self.own_settings or "epochs" in chosen.pinned else self.geometry.epochs
        ensemble_cost = self._cost(rules.ensemble_members, searched_epochs, char_epochs, unit_seconds)
        single_cost = self._cost(1, searched_epochs, char_epochs, unit_seconds)
        # The ensemble where a GPU trains it and the budget allows it, else (the cheaper trial) one word network
        # against a pair.
        members = rules.ensemble_members if search.platform != "cpu" and search.budget.affords(*ensemble_cost) else 1
        ensemble_not_tried = (
            "not on a CPU (its members train one after another)"
            if search.platform == "cpu"
            else f"no budget left (needs ~{ensemble_cost[0]:,} network-steps)"
        )
        if members == 1 and (not self.try_chars or not search.budget.affords(*single_cost)):
            return Networks(
                1,
                chosen.char_ngrams,
                chosen.char_learning_rate,
                chosen.char_epochs,
                NetworksSummary(
                    1,
                    ensemble_not_tried=ensemble_not_tried,
                    char_ngrams_not_tried=self.why_not
                    if not self.try_chars
                    else f"no budget left (needs ~{single_cost[0]:,} network-steps)",
                ),
            )
        char_data = self._char_data() if self.try_chars else None
        # On a GPU the character network's programs compile while the word networks train (their results are not
        # read: a program that failed to compile here compiles when it runs, and fails there with its own error).
        with ThreadPoolExecutor(1) as compiler:
            if char_data and search.platform != "cpu":
                self._precompile_chars(compiler, char_data[0])
            words = self._word_scores(members, searched_epochs)
            chars = self._char_scores(char_epochs, char_data) if char_data else None
        return self._verdict(members, words, chars, char_epochs, ensemble_not_tried)

    def _word_scores(self, members: int, searched_epochs: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per compared fold: (the members' (documents, members, C) scores after the searched epochs, the truth).
        Where a GPU's rounds trained more networks at once than the trial needs, it trains as many (the extra
        ones unused): the rounds' compiled program then serves it (same shapes)."""
        search, corpus, geometry, chosen = self.search, self.corpus, self.geometry, self.chosen
        trained = max(members, len(search.optimizers)) if search.platform != "cpu" else members
        variant = Variant(
            chosen.stop_words, chosen.ngram_max, chosen.nb_weighting, chosen.sublinear_tf, chosen.batch_size
        )
        out = []
        for fold in self.folds:
            _, val_rows = corpus.folds[fold]
            data = fold_round(corpus, geometry, fold, variant, chosen, chosen.seed + 100 + fold)  # (one label each)
            _, scores = fit_candidates(
                data,
                corpus.n_classes,
                [chosen.learning_rate] * trained,
                [chosen.weight_decay] * trained,
                searched_epochs,
                chosen.hidden,
                chosen.seed + 100 + fold,
                scores_from=searched_epochs,
            )
            out.append((scores[-1, :, :members], corpus.y[val_rows]))
        return out

    def _char_data(self) -> list[RoundData]:
        """Per compared fold, the character view's batches, every fold cut to one shape (one compilation)."""
        search, corpus, geometry, chosen = self.search, self.corpus, self.geometry, self.chosen
        chars = count_chars(corpus.texts, chosen.min_df, search.pool)
        folds = [(corpus.folds[fold], chosen.seed + 200 + fold) for fold in self.folds]
        matrices = [char_fold_matrices(*chars, corpus.y, *rows, chosen, geometry.features) for rows, _ in folds]
        buckets = buckets_for(search.platform)
        shape = batch_shape(
            [train for train, _ in matrices],
            chosen.batch_size,
            [cut_order(seed, train.shape[0])[0] for (train, _), (_, seed) in zip(matrices, folds)],
            buckets,
        )
        val_shape = batch_shape([val for _, val in matrices], geometry.score_batch, buckets=buckets)
        return [
            round_data(
                train_c,
                corpus.y[train_rows],
                val_c,
                corpus.y[val_rows],
                chosen.batch_size,
                seed,
                shape,
                val_shape,
                geometry.score_batch,
                weights=(corpus.row_weights(train_rows), corpus.row_weights(val_rows)),
            )
            for (train_c, val_c), ((train_rows, val_rows), seed) in zip(matrices, folds)
        ]

    def _precompile_chars(self, compiler: ThreadPoolExecutor, data: RoundData) -> None:
        """The character network's epoch, scoring and log-probabilities programs (_char_scores runs them)."""
        models, classes, hidden = len(self.char_rates), self.corpus.n_classes, self.chosen.hidden
        compiler.submit(precompile_epoch, data, classes, models, hidden, self.chosen.batch_size, data.train[0].shape)
        compiler.submit(precompile_hits, data, classes, models, hidden)
        compiler.submit(precompile_scores, data, classes, models, hidden)

    def _char_scores(self, char_epochs: int, char_data: list[RoundData]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per compared fold: the character network's (validation curves (epochs, rates), scores (epochs run,
        documents, rates, C)); epochs after an early stop score 0."""
        chosen, patience = self.chosen, self.geometry.patience if self.own_settings else None
        return [
            fit_candidates(
                data,
                self.corpus.n_classes,
                self.char_rates,
                [chosen.weight_decay] * len(self.char_rates),
                char_epochs,
                chosen.hidden,
                chosen.seed + 200 + fold,
                patience=patience,
                scores_from=1,
            )
            for fold, data in zip(self.folds, char_data)
        ]

    def _verdict(
        self, members: int, words: list, chars: list | None, char_epochs: int, ensemble_not_tried: str
    ) -> Networks:
        """The choice from the trial's scores, paired per validation document (the same word networks, so their
        noise cancels)."""
        chosen = self.chosen
        single, together, ensemble_gains, word_right = [], [], [], []
        for scores, truth in words:
            # Summed log-probabilities pick the class that summed scores do (each network's normaliser is the same
            # for every class), so this is the merged model's (textclf.models.stacked.merged) choice.
            member_right = np.argmax(scores, axis=-1) == truth[:, None]  # (documents, members)
            ensemble_right = np.argmax(scores.sum(axis=1), axis=-1) == truth
            single.append(float(member_right.mean()))
            together.append(float(ensemble_right.mean()))
            ensemble_gains.append(ensemble_right - member_right.mean(axis=1))
            word_right.append(member_right)
        paired, pair_gains, char_rate, char_epoch = [], [], 0.0, 0  # 0: Settings' "the words'"
        if chars:
            # The character network's (epoch, rate): on a GPU its best mean validation accuracy over the folds,
            # among the epochs every fold ran (the first maximum: the fewest epochs); elsewhere the words' (its
            # only rate, its last epoch).
            epoch, rate = char_epochs - 1, 0
            if self.own_settings:
                run = min(len(scores) for _, scores in chars)
                mean = np.mean([curve[:run] for curve, _ in chars], axis=0)
                epoch, rate = np.unravel_index(np.argmax(mean), mean.shape)
                char_rate, char_epoch = self.char_rates[rate], int(epoch) + 1
            for (scores, truth), member_right, (_, char_scores) in zip(words, word_right, chars):
                pair_right = np.argmax(scores + char_scores[epoch, :, rate][:, None, :], axis=-1) == truth[:, None]
                paired.append(float(pair_right.mean()))
                pair_gains.append(np.mean(pair_right.astype(np.float64) - member_right, axis=1))
        chosen_members, char_ngrams = fewest_networks_that_win(
            np.mean(single),
            (np.mean(together), ensemble_gains) if members > 1 else None,
            (np.mean(paired), pair_gains) if paired else None,
            members,
            self.search.rules.networks_errors,
        )
        summary = NetworksSummary(
            chosen_members,
            char_ngrams=char_ngrams or chosen.char_ngrams,
            single_accuracy=float(np.mean(single)),
            folds=len(self.folds),
        )
        if not char_ngrams:
            char_rate, char_epoch = 0.0, 0  # no character network to train
        if members > 1:
            summary.ensemble_accuracy = float(np.mean(together))
            summary.ensemble_standard_error = standard_error(ensemble_gains)
        else:
            summary.ensemble_not_tried = ensemble_not_tried
        if paired:
            summary.char_pair_accuracy, summary.char_pair_standard_error = (
                float(np.mean(paired)),
                standard_error(pair_gains),
            )
            summary.char_learning_rate, summary.char_epochs = char_rate, char_epoch
        else:
            summary.char_ngrams_not_tried = self.why_not
        gain = (
            np.mean(together) if chosen_members > 1 else np.mean(paired) if char_ngrams else np.mean(single)
        ) - np.mean(single)
        # the chosen option's log-probabilities on each fold's validation documents: its members' mean, the views'
        # mean with a character network (the merged model's scores, up to a constant a document); none where a
        # typed character network was not trained here
        chosen_scores = None if chosen.char_ngrams and not char_ngrams else []
        for fold, (scores, truth) in enumerate(words if chosen_scores is not None else []):
            fold_scores = scores.mean(axis=1) if chosen_members > 1 else scores[:, 0]
            if char_ngrams:
                fold_scores = (fold_scores + chars[fold][1][epoch, :, rate]) / 2
            chosen_scores.append((fold_scores, truth))
        return Networks(
            chosen_members,
            char_ngrams or chosen.char_ngrams,
            char_rate,
            char_epoch,
            summary,
            float(gain),
            chosen_scores,
        )


class Networks(NamedTuple):
    """_choose_networks' answer: the Settings fields it decides, and what was measured."""

    members: int  # Settings.ensemble
    char_ngrams: bool
    char_learning_rate: float  # the character network's, as read off its curves (0: the words')
    char_epochs: int  # on the searched documents, 0: the words' (search_settings scales it to a larger corpus)
    summary: NetworksSummary
    gain: float = 0.0  # the chosen option's mean validation accuracy over one network's (0: one network)
    # Per compared fold, the chosen option's ((validation documents, C) log-probabilities, the truth); None where
    # the trial did not train (the family trial then does not try a linear model beside the network)
    scores: list[tuple[np.ndarray, np.ndarray]] | None = None


def fewest_networks_that_win(
    single: float,
    ensemble: tuple[float, list[np.ndarray]] | None,
    pair: tuple[float, list[np.ndarray]] | None,
    members: int,
    errors: float,
) -> tuple[int, bool]:
    """(networks, with a character network) of the most accurate option: one network (`single`, its validation
    accuracy), the ensemble of `members` or the character pair ((accuracy, per-fold per-document gains over one
    network) each, None if not tried), each of the latter only where its mean gain is above rules.networks_errors
    standard errors of it;
    a tie keeps fewer networks (one, then the pair, then the ensemble)."""
    options = {(1, False): single}
    for key, option in (((1, True), pair), ((members, False), ensemble)):
        if option is not None and np.mean(np.concatenate(option[1])) > errors * standard_error(option[1]):
            options[key] = option[0]
    return max(options, key=lambda key: options[key])  # dicts keep insertion order: the first maximum wins


def standard_error(gains: list[np.ndarray]) -> float:
    """Standard error of the mean of the per-document gains of every fold."""
    gain = np.concatenate(gains).astype(np.float64)
    return float(gain.std() / np.sqrt(max(1, len(gain))))
