"""The seeded initialisations' compile time at XLA's -O3 (its default) and at the -O1 the product compiles them with
(textclf/training/backends.py, INIT_COMPILER_OPTIONS), on whatever device JAX sees.

    python -m benchmarks.speed.init_compile [--features 8192,32768] [--models 6] [--hidden 128] [--classes 4]

For each program (the search's K stacked networks, stacked_step.init_stack; one network's parameters and Adam
state, step._start_state) and each width: seconds to compile at each level (each compilation of a width never
compiled before in this process), seconds to run the compiled program (the second call), and whether the two
levels give the same arrays bit for bit. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from textclf.training.steps import stacked as stacked_step, step


def _programs(features: int, models: int, hidden: int, classes: int):
    """name -> (the function under the product's jit, its arguments; all but the first static)."""
    return {
        "stacked (init_stack)": (stacked_step.init_stack, (jax.random.PRNGKey(0), features, hidden, classes, models)),
        "one network (_start_state)": (step._start_state, (0, features, hidden, classes, 1.0, "adam", None)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", default="8192,32768")
    parser.add_argument("--models", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--classes", type=int, default=4)
    args = parser.parse_args()
    print(f"device: {jax.devices()[0].platform}\n")
    print("| program | F | -O3 compile s | -O1 compile s | -O3 run s | -O1 run s | same arrays |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for features in (int(f) for f in args.features.split(",")):
        for name, (jitted, call) in _programs(features, args.models, args.hidden, args.classes).items():
            compile_s, run_s, outputs = {}, {}, {}
            for level in (3, 1):
                program = jax.jit(
                    jitted.__wrapped__,
                    static_argnums=tuple(range(1, len(call))),
                    compiler_options={"xla_backend_optimization_level": level},
                )
                start = time.perf_counter()
                compiled = program.lower(*call).compile()
                compile_s[level] = time.perf_counter() - start
                jax.block_until_ready(compiled(call[0]))
                start = time.perf_counter()
                outputs[level] = jax.block_until_ready(compiled(call[0]))
                run_s[level] = time.perf_counter() - start
            same = all(
                np.array_equal(np.asarray(a), np.asarray(b))
                for a, b in zip(jax.tree.leaves(outputs[3]), jax.tree.leaves(outputs[1]), strict=True)
            )
            print(
                f"| {name} | {features:,} | {compile_s[3]:.2f} | {compile_s[1]:.2f} | {run_s[3]:.3f} | "
                f"{run_s[1]:.3f} | {'yes' if same else 'no'} |"
            )


if __name__ == "__main__":
    main()
