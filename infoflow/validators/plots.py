"""What every family's plots share: figures that leave the user's matplotlib backend alone
(a :class:`matplotlib.figure.Figure` made directly, never pyplot's, so a notebook's inline
figures keep working), names drawn as written, one way to save a figure, and the learning
curves of a group. The families' own plots live with them (``<family>/plots.py``): there a
builder per picture returns its Figure, and ``figures(sections)`` all of them by file name,
which a validator's ``plot`` saves (:func:`save_all`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from infoflow.core.files import write_with

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: A group's curves: metric -> member -> [(step, value)].
Curves = dict[str, dict[str, list[tuple[int, float]]]]
#: Horizontal lines a panel draws: metric -> [(value, what it is)].
Floors = dict[str, list[tuple[float, str]]]


def subplots(*args: Any, figsize: tuple[float, float] = (6.4, 4.8), **kwargs: Any):
    """``(figure, axes)`` as ``pyplot.subplots`` makes them, on a figure pyplot does not
    hold (saved by :func:`save`, shown by a notebook when returned)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*args, **kwargs)


def colormap(name: str):
    """matplotlib's colour map ``name``."""
    import matplotlib

    return matplotlib.colormaps[name]


def plain_text(fig) -> None:
    """The texts of ``fig`` that come from names (titles, axis labels, legends, annotations)
    drawn as written: a name with ``$`` in it is not mathtext (which would fail on it, after
    the training it plots). Tick labels keep mathtext: a log axis writes 10^k with it."""
    texts = [*fig.texts, getattr(fig, "_suptitle", None)]
    for legend in fig.legends:
        texts += [legend.get_title(), *legend.get_texts()]
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


def finished(fig: Figure) -> Figure:
    """``fig`` ready to show or save: texts as written, empty log axes linear."""
    plain_text(fig)
    linear_where_empty(fig)
    return fig


def save(fig, path: str | Path) -> Path:
    """Lay out and write ``fig`` at 110 dpi (whole or not at all); texts as written, empty
    log axes linear."""
    path = Path(path)  # a str too (an AttributeError before)
    finished(fig)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    write_with(path, lambda temporary: fig.savefig(temporary, dpi=110, format=path.suffix[1:]))
    return path


def save_all(out: Path, figures: dict[str, Figure]) -> list[Path]:
    """Each of ``figures`` (file name -> Figure) saved in ``out`` (:func:`save`), in order."""
    return [save(fig, out / name) for name, fig in figures.items()]


def learning_curves(title: str, curves: Curves, floors: Floors | None = None) -> Figure:
    """One panel per metric of ``curves`` (its value against the step, both on log scales),
    one line per member, and each of the metric's ``floors`` (the threshold a claim uses) a
    black horizontal line (dashed, dotted, ...); one legend beside the panels; names drawn as
    written."""
    from matplotlib.figure import Figure

    entries = len({m for members in curves.values() for m in members})
    entries += len({what for metric in curves for _, what in (floors or {}).get(metric, [])})
    columns = 1 + entries // 30  # each further column widens the figure, not the panels
    width = 4.4 * len(curves) + 3.0 + 2.2 * (columns - 1)
    fig = Figure(figsize=(width, 4.0), layout="constrained")
    colours, legend = colormap("viridis"), {}
    for ax, (metric, members) in zip(
        fig.subplots(1, len(curves), squeeze=False)[0], curves.items(), strict=True
    ):
        for i, (member, points) in enumerate(members.items()):
            steps, values = zip(*points, strict=True) if points else ((), ())
            colour = colours(i / max(1, len(members) - 1))
            legend[member] = ax.plot(steps, values, color=colour, linewidth=1, label=member)[0]
        for j, (value, what) in enumerate((floors or {}).get(metric, [])):
            style = ("--", ":", "-.")[j % 3]
            legend[what] = ax.axhline(value, color="black", linestyle=style, linewidth=0.9)
            legend[what].set_label(what)
        ax.set(xscale="log", yscale="log", xlabel="step", ylabel=metric, title=metric)
    fig.suptitle(title)
    fig.legend(
        list(legend.values()), list(legend), loc="outside right upper", fontsize=6, ncols=columns
    )
    plain_text(fig)
    return fig
