"""Where a `textclf train` run's seconds go, the search's parts included: `python -m benchmarks.speed.search_timeline
train TRAIN --test TEST --profile` runs the CLI in this process and prints, on stderr, `TL <seconds since start>`
lines as each phase starts and ends, each of the search's rounds ends (its seconds, fold and variant), and the
networks and family trials end. The search's module is patched as it is imported, so the run imports JAX when it
would without this script (a run that has imported JAX skips the search's host work ahead of it)."""

from __future__ import annotations

import sys
import time

START = time.time()


def log(message: str) -> None:
    print(f"TL {time.time() - START:7.2f} {message}", file=sys.stderr, flush=True)


def _timed_method(cls, name: str, label: str, describe=None) -> None:
    original = getattr(cls, name)

    def timed(self, *args, **kwargs):
        started = time.time()
        try:
            return original(self, *args, **kwargs)
        finally:
            log(f"{label} {time.time() - started:.3f}" + (describe(self, *args) if describe else ""))

    setattr(cls, name, timed)


def _round(rounds, number, *_) -> str:
    fold, variant, epochs = rounds.schedule[number]
    return f" fold {fold} variant {rounds.search.variants.index(variant)} to epoch {epochs}"


def _patch_search() -> None:
    from textclf.training.search import family, halving, networks

    _timed_method(halving._Rounds, "_train", "round", _round)
    _timed_method(networks.NetworksTrial, "choose", "networks trial")
    _timed_method(family.FamilyTrial, "choose", "family trial")


class _PatchOnImport:
    """A meta path finder that patches the search's rounds once halving.py has been imported."""

    def find_spec(self, name, path, target=None):
        if name != "textclf.training.search.halving":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            sys.modules[name] = module
            _patch_search()

        spec.loader.exec_module = exec_module
        return spec


def _trace_phases() -> None:
    from contextlib import contextmanager

    from textclf.runs import results

    original = results.PhaseTimer.__call__

    @contextmanager
    def traced(self, name, description=""):
        started = time.time()
        log(f"enter {name}")
        with original(self, name, description):
            yield
        log(f"exit {name} {time.time() - started:.2f}")

    results.PhaseTimer.__call__ = traced


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="python -m benchmarks.speed.search_timeline train CORPUS [train options]",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="a textclf command and its options")
    command = parser.parse_args().command
    if not command:
        parser.error("give a textclf command, e.g. train CORPUS --test TEST --profile")
    _trace_phases()
    sys.meta_path.insert(0, _PatchOnImport())
    from textclf.frontends.cli import main as cli

    sys.argv = ["textclf", *command]
    cli()


if __name__ == "__main__":
    main()
