"""The corpus formats textclf reads, one module a format (folder, table: CSV and TSV, JSONL, fastText's, Parquet),
over base.py (what every format shares: the skip counts, a line-file's format as data, reading lines); lines.py
reads a file of one document a line in any of them (pipelines/shares.py reads it a share at a time)."""
