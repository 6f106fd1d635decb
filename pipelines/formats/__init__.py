"""The corpus formats textclf reads, one module a format (folder, table: CSV and TSV, JSONL, fastText's, Parquet),
each a CorpusFormat class that holds what was decided from the file and how it is read; detect.py decides which
(corpus_format), base.py holds what every format shares (the skip counts, the interface, reading lines), lines.py
what the formats of one document a line share (a share of a file's bytes; pipelines/shares.py reads it in workers),
records.py the one contract every reader hands its values to."""
