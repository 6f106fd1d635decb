"""Reading and vectorizing corpora: workers, shares, fits and transforms."""
