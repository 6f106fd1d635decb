"""The vector cache: an unchanged corpus is not vectorized twice; any change is a miss."""

import numpy as np

from db import open_db
from db import runs
from pipelines import vector_cache
from textclf.paths import vector_cache_dir
from textclf.runs.run import train


def _cached(db_path, run_id) -> bool:
    return bool(runs.get_run(open_db(db_path), run_id)["vectors_cached"])


def test_second_run_reuses_the_vectors_and_trains_the_same_model(corpus_dir, db_path, fast_settings, tmp_path):
    first = train(corpus_dir, fast_settings, db_path=db_path, model_path=tmp_path / "a.npz")
    second = train(corpus_dir, fast_settings, db_path=db_path, model_path=tmp_path / "b.npz")
    assert not _cached(db_path, first.run_id) and _cached(db_path, second.run_id)
    assert first.model.vectorizer.terms == second.model.vectorizer.terms
    np.testing.assert_array_equal(first.model.params.w1, second.model.params.w1)
    assert first.eval_accuracy == second.eval_accuracy


def test_changed_corpus_or_settings_miss(corpus_dir, db_path, fast_settings):
    train(corpus_dir, fast_settings, db_path=db_path)
    (corpus_dir / "sports" / "extra.txt").write_text("a brand new match report about the final whistle")
    changed = train(corpus_dir, fast_settings, db_path=db_path)
    assert not _cached(db_path, changed.run_id)
    other_words = train(corpus_dir, fast_settings.replace(ngram_max=1), db_path=db_path)
    assert not _cached(db_path, other_words.run_id)
    other_split = train(corpus_dir, fast_settings.replace(seed=3), db_path=db_path)
    assert not _cached(db_path, other_split.run_id)


def test_cache_off_and_damaged_entries(corpus_dir, db_path, fast_settings, monkeypatch):
    train(corpus_dir, fast_settings, db_path=db_path)
    for entry in vector_cache_dir().glob("*.npz"):
        entry.write_bytes(b"not an npz file")
    damaged = train(corpus_dir, fast_settings, db_path=db_path)
    assert not _cached(db_path, damaged.run_id) and damaged.eval_accuracy >= 0
    for entry in vector_cache_dir().glob("*.npz"):  # a truncated entry (a crash mid-copy): a miss, rewritten
        entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    truncated = train(corpus_dir, fast_settings, db_path=db_path)
    assert not _cached(db_path, truncated.run_id)
    assert _cached(db_path, train(corpus_dir, fast_settings, db_path=db_path).run_id)  # and rewritten whole
    monkeypatch.setenv("TEXTCLF_VECTOR_CACHE", "off")
    off = train(corpus_dir, fast_settings, db_path=db_path)
    assert not _cached(db_path, off.run_id)


def test_old_entries_are_dropped(tmp_path, corpus_dir, fast_settings, monkeypatch):
    from pipelines.corpus import read_corpus
    from pipelines.vectorize import fit_vectorizer

    corpus = read_corpus(corpus_dir)
    vectorizer, matrix = fit_vectorizer(corpus.texts, corpus.labels, fast_settings)
    monkeypatch.setattr(vector_cache, "MAX_ENTRIES", 2)
    for key in ("a", "b", "c"):
        vector_cache.save(tmp_path, key, vectorizer, matrix, matrix)
    assert sorted(p.stem for p in tmp_path.glob("*.npz")) == ["b", "c"]
    loaded = vector_cache.load(tmp_path, "c")
    assert loaded[0].terms == vectorizer.terms and abs(loaded[1] - matrix).max() == 0


def test_an_entry_that_loads_but_holds_wrong_numbers_is_a_miss(corpus_dir, db_path, fast_settings, tmp_path):
    first = train(corpus_dir, fast_settings, db_path=db_path, model_path=tmp_path / "a.npz")
    (entry,) = vector_cache_dir().glob("*.npz")
    with np.load(entry, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["train.indices"] = arrays["train.indices"] + 10**6  # a valid file, every column out of range
    np.savez(entry, **arrays)
    again = train(corpus_dir, fast_settings, db_path=db_path, model_path=tmp_path / "b.npz")
    assert not _cached(db_path, again.run_id) and again.eval_accuracy == first.eval_accuracy
    np.testing.assert_array_equal(first.model.params.w1, again.model.params.w1)
