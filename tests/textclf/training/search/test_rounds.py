"""Networks side by side as the search's rounds train them (textclf/training/ensembles.py)."""

import numpy as np
import scipy.sparse as sp

from textclf.training.search.rounds import CandidateRound, fit_candidates, round_data


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = sp.random(120, 32, density=0.2, format="csr", random_state=seed, dtype=np.float32)
    y = (np.asarray(x[:, :16].sum(axis=1)).ravel() > np.asarray(x[:, 16:].sum(axis=1)).ravel()).astype(np.int32)
    train, val = (
        rng.permutation(120)[:90],
        np.arange(120)[np.isin(np.arange(120), rng.permutation(120)[:90], invert=True)],
    )
    return lambda: round_data(x[train], y[train], x[val], y[val], 16, seed, (0, 0), (0, 0))


def test_a_round_that_goes_on_trains_as_one_never_paused():
    data = _data()
    rates, decays = [0.003, 0.01], [0.0, 1e-4]
    whole = fit_candidates(data(), 2, rates, decays, 6, 8, 0)
    paused = CandidateRound(data(), 2, rates, decays, 6, 8, 0)
    first = paused.run(2).copy()
    assert paused.done == 2 and not first[2:].any() and first[:2].all()
    np.testing.assert_allclose(paused.run(6), whole, rtol=1e-6)
    assert paused.run(9) is paused.accuracies and paused.done == 6  # never past the round's epochs


def test_an_early_stop_holds_when_the_round_goes_on():
    round_ = CandidateRound(_data(1)(), 2, [1e-9], [0.0], 20, 8, 0, patience=1)  # a rate that learns nothing
    round_.run(10)
    assert round_.stopped and round_.done < 10
    done = round_.done
    round_.run(20)
    assert round_.done == done and not round_.accuracies[done:].any()
