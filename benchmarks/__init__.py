"""Benchmark commands: each prints a markdown table (BENCHMARKS.md holds the recorded results and their commands).

accuracy/ beside the peers and the search's rules; corpora/ converters for public corpora; speed/ training end to
end; service/ latency and load; memory/ host memory; vectorizing/ reading and vectorizing; kernels/ the Pallas
kernels and steps; cnn/ the image network; gpu/ shell scripts that run them on a GPU machine. timing.py and
timed_run.py are shared helpers."""
