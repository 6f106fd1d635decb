"""A run's per-epoch loss and accuracy curves (matplotlib, no display needed): a PNG, SVG or PDF file for
`textclf runs plot`, SVG text for `textclf runs ui`."""

from __future__ import annotations

import io
from pathlib import Path

from textclf.errors import InputError

FORMATS = (".png", ".svg", ".pdf")


def _figure(run: dict):
    """Loss, and accuracy (or a label-set run's metric) by epoch; where the run trains several models one after
    another (a character network, a linear model: the epochs' `view`), a dashed line where each starts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = run["epochs"]
    if not epochs:
        raise InputError(f"run {run['id']} has no finished epochs to plot (status {run['status']})")
    x = [e["epoch"] for e in epochs]
    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(10, 4))
    loss_ax.plot(x, [e["loss"] for e in epochs], marker="o")
    loss_ax.set(title="training loss", xlabel="epoch", ylabel="loss")
    metric = run.get("eval_metric") or "accuracy"
    subset = metric != "accuracy"  # label sets: eval_accuracy is the subset accuracy; the run's metric beside it
    acc_ax.plot(x, [e["train_accuracy"] for e in epochs], marker="o", label="train" + (" (subset)" if subset else ""))
    kind = run.get("eval_kind") or "eval"
    if any(e["eval_accuracy"] is not None for e in epochs):
        acc_ax.plot(x, [e["eval_accuracy"] for e in epochs], marker="o", label=kind + (" (subset)" if subset else ""))
    held = (run.get("early_stopping") or {}).get("accuracies") or []
    if subset and held:  # the run's metric on its held-out documents, epoch by epoch (what chose its epoch)
        acc_ax.plot(x[: len(held)], held[: len(x)], marker="s", label=f"held-out {metric}")
    acc_ax.set(
        title=metric if not subset else f"{metric} and subset accuracy",
        xlabel="epoch",
        ylabel=metric if not subset else "score",
    )
    for ax in (loss_ax, acc_ax):
        _mark_views(ax, epochs)
    acc_ax.legend()
    fig.suptitle(f"run {run['id']}: {run['corpus']}" + (f" (judged by {metric})" if subset else ""))
    fig.tight_layout()
    return fig


def _mark_views(ax, epochs: list[dict]) -> None:
    """A dashed line and the model's name where each of a run's models after the first starts."""
    for before, epoch in zip(epochs, epochs[1:]):
        if epoch.get("view") and epoch.get("view") != before.get("view"):
            ax.axvline(epoch["epoch"] - 0.5, color="grey", linestyle="--", linewidth=1)
            ax.annotate(
                epoch["view"],
                (epoch["epoch"] - 0.5, 1),
                xycoords=("data", "axes fraction"),
                xytext=(3, -12),
                textcoords="offset points",
                fontsize=8,
                color="grey",
            )


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
