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
    """Every text of ``fig`` drawn as written: a name with ``$`` in it is not mathtext
    (which would fail on it, after the training it plots)."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)


def save(fig, path: Path) -> Path:
    """Lay out, write at 110 dpi (whole or not at all) and close ``fig``; texts as written."""
    plt = pyplot()
    plain_text(fig)
    fig.tight_layout()
    write_with(path, lambda temporary: fig.savefig(temporary, dpi=110))
    plt.close(fig)
    return path
