"""Which programs a run compiled and which the persistent compilation cache served, read from the log JAX writes
with JAX_LOG_COMPILES=1 (stderr of `textclf train`): one row a program with its argument shapes, then totals.

    JAX_LOG_COMPILES=1 textclf train CORPUS 2> run.log; python -m benchmarks.speed.compile_log run.log [...]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

_PROGRAM = re.compile(
    r"Compiling (jit\([^)]*\)) with global shapes and types \((.*?)\)\. Argument mapping.*?\n(.*?)"
    r"Finished XLA compilation of jit\([^)]*\) in ([0-9.]+)",
    re.S,
)


def programs(text: str) -> list[tuple[str, bool, float, str]]:
    """(name, served by the cache, seconds, the shapes of its array arguments) of each compilation in a log."""
    out = []
    for name, shapes, between, seconds in _PROGRAM.findall(text):
        arrays = [s for s in re.findall(r"ShapedArray\(([^)]*)\)", shapes) if "[]" not in s]
        out.append((name, "cache hit" in between, float(seconds), " ".join(arrays)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="list the programs the cache served too")
    args = parser.parse_args(argv)
    print("| log | program | cache | seconds | array arguments |\n|---|---|---|---:|---|")
    totals = []
    for log in args.logs:
        found = programs(log.read_text(errors="replace"))
        for name, hit, seconds, shapes in found:
            if args.all or (not hit and seconds >= 0.05):
                print(f"| {log.name} | {name} | {'hit' if hit else 'miss'} | {seconds:.2f} | {shapes[:160]} |")
        misses = [s for _, hit, s, _ in found if not hit]
        totals.append(
            f"| {log.name} | {len(found)} programs | {len(found) - len(misses)} hits, {len(misses)} "
            f"compiled | {sum(misses):.2f} |  |"
        )
    print("\n".join(totals))


if __name__ == "__main__":
    main()
