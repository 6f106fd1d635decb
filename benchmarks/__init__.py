"""Benchmark commands: each prints a markdown table (see BENCHMARKS.md for recorded results)."""
