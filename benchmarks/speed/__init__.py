"""Training speed end to end: cold runs, the search's time, big corpora, several GPUs."""
