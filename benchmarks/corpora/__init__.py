"""Public corpora converted to train/test JSONL pairs for the accuracy benchmarks."""
