"""Run one command, then print the last lines of its output, its exit status, wall time and peak host memory
(the largest resident set of it and the processes it waited for, from getrusage). A command that outlives
--timeout is killed and reported as "timeout".

    python -m benchmarks.timed_run --label NAME [--timeout S] [--lines N] -- COMMAND ...

The GPU run scripts (benchmarks/gpu/big.sh, scale.sh) time whole `textclf train` runs and their peers with it.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", required=True)
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--lines", type=int, default=3, help="last lines of stdout to print")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
        status, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as stopped:  # run() killed the child
        decode = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")  # noqa: E731
        status, out, err = "timeout", decode(stopped.stdout), decode(stopped.stderr)
    wall = time.perf_counter() - start
    print("\n".join(out.strip().splitlines()[-args.lines :]))
    if status != 0:
        print("\n".join(err.strip().splitlines()[-8:]))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    print(f"{args.label}: exit {status}, wall {wall:.1f} s, peak host memory {peak:.1f} GiB", flush=True)


if __name__ == "__main__":
    main()
