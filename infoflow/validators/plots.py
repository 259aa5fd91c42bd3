"""What every family's plots share: matplotlib without a screen, and one way to save a
figure. The plots themselves live with their family (``<family>/plots.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infoflow.core.files import write_with


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plain_text(fig) -> None:
    """The texts of ``fig`` that come from names (titles, axis labels, legends, annotations)
    drawn as written: a name with ``$`` in it is not mathtext (which would fail on it, after
    the training it plots). Tick labels keep mathtext: a log axis writes 10^k with it."""
    texts = [*fig.texts, getattr(fig, "_suptitle", None)]
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        texts += ax.texts
        legend = ax.get_legend()
        if legend is not None:
            texts += [legend.get_title(), *legend.get_texts()]
    for text in texts:
        if text is not None:
            text.set_parse_math(False)


def linear_where_empty(fig) -> None:
    """A log axis with no finite positive value on it (every measurement NaN or infinite: a
    target of zero variance) drawn linear and said so, where matplotlib would raise."""
    import numpy as np

    for ax in fig.axes:
        low, high = ax.dataLim.get_points()
        for i, axis in enumerate((ax.xaxis, ax.yaxis)):
            bounds = np.array([low[i], high[i]])
            if axis.get_scale() == "log" and not (np.isfinite(bounds).all() and low[i] > 0):
                getattr(ax, f"set_{'xy'[i]}scale")("linear")
                ax.text(0.5, 0.5, "no finite value to plot", transform=ax.transAxes, ha="center")


def save(fig, path: Path) -> Path:
    """Lay out, write at 110 dpi (whole or not at all) and close ``fig``; texts as written,
    empty log axes linear."""
    plt = pyplot()
    plain_text(fig)
    linear_where_empty(fig)
    fig.tight_layout()
    write_with(path, lambda temporary: fig.savefig(temporary, dpi=110))
    plt.close(fig)
    return path
