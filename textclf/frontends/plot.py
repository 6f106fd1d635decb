"""A run's per-epoch loss and accuracy curves (matplotlib, no display needed): a PNG, SVG or PDF file for
`textclf runs plot`, SVG text for `textclf runs ui`."""

from __future__ import annotations

import io
from pathlib import Path

from textclf.errors import InputError

FORMATS = (".png", ".svg", ".pdf")


def _figure(run: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = run["epochs"]
    if not epochs:
        raise InputError(f"run {run['id']} has no finished epochs to plot (status {run['status']})")
    x = [e["epoch"] for e in epochs]
    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(10, 4))
    loss_ax.plot(x, [e["loss"] for e in epochs], marker="o")
    loss_ax.set(title="training loss", xlabel="epoch", ylabel="cross-entropy")
    acc_ax.plot(x, [e["train_accuracy"] for e in epochs], marker="o", label="train")
    if any(e["eval_accuracy"] is not None for e in epochs):
        acc_ax.plot(x, [e["eval_accuracy"] for e in epochs], marker="o", label=run.get("eval_kind") or "eval")
    acc_ax.set(title="accuracy", xlabel="epoch", ylabel="accuracy")
    acc_ax.legend()
    fig.suptitle(f"run {run['id']}: {run['corpus']}")
    fig.tight_layout()
    return fig


def plot_run(run: dict, out: Path) -> Path:
    if out.suffix.lower() not in FORMATS:
        raise InputError(f"--out '{out}' is not a picture file: name a {', '.join(FORMATS)} file")
    if out.is_dir():
        raise InputError(f"--out '{out}' is a folder: name a {', '.join(FORMATS)} file")
    fig = _figure(run)
    import matplotlib.pyplot as plt

    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def curve_svg(run: dict) -> str:
    """The same curves as an SVG document's text."""
    fig = _figure(run)
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    return buffer.getvalue()
