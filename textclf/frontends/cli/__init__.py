"""`textclf` command line: thin typer commands over the library. Results go to stdout, progress and errors to
stderr; any of textclf.errors.USER_ERRORS becomes "Error: <message>" and exit code 1, never a traceback.
base.py: the apps, consoles, error rule and training options; training.py: train, submit, daemon; classify.py:
predict, eval; records.py: runs, jobs; tools.py: dataset, bench, serve. Importing this package registers them all."""

from __future__ import annotations

import sys
import threading

from textclf.frontends.cli import training, classify, tools, records  # noqa: F401, I001 - registers the commands in the order --help lists them
from textclf.frontends.cli.base import app, err, jobs_app, out, runs_app  # noqa: F401 - the apps, as before


def main() -> None:
    """The `textclf` command. Once a command has finished, the process leaves without Python's teardown of its
    modules, which after a run that imported JAX and scikit-learn takes about a second and frees nothing the
    operating system would not (BENCHMARKS.md, "Cold start with the search on": a cold `textclf train` 0.8-1.2 s
    less on an H100 machine, a prediction in a fresh process 1.52 -> 1.04 s on the 2-core CPU). What a normal exit
    does that matters still happens: the exit handlers run (logging's flush, temporary directories, JAX's own),
    then stdout and stderr are flushed. Where a thread the interpreter would wait for still runs, the exit is
    Python's own."""
    try:
        app()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    if isinstance(code, str):  # sys.exit("message"): printed, status 1, as the interpreter does
        print(code, file=sys.stderr)
        code = 1
    code = 0 if code is None else code
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    import atexit
    import os
    import time

    from textclf.frontends.profile import print_exit

    exiting = time.perf_counter()
    atexit._run_exitfuncs()  # noqa: SLF001 - the handlers a normal exit runs; public API has no other way
    _flush()
    print_exit(time.perf_counter() - exiting)  # `--profile`: what the exit took
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written to it anyway
            pass
