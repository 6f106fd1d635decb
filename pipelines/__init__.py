"""Corpus readers, vectorizers and dataset converters: everything between files on disk and arrays."""
