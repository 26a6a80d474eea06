"""`--plot FILE.png`: the share of stale citations per hour, popularity-driven vs uniform saves.

matplotlib is an optional extra (`pip install 'kbes[plot]'`); without it the option fails with a
message saying so, before any simulation runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

INSTALL_HINT = "pip install 'kbes[plot]'"


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def require_matplotlib() -> None:
    """Fail early (before a long run) if the plot cannot be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotUnavailable(
            f"--plot needs matplotlib, an optional extra of kbes: {INSTALL_HINT}"
        ) from None


def plot_staleness(figures: dict[str, Any], path: Path) -> None:
    """Draw stale share per hour for each run present in `figures['staleness']`."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    labels = {
        "popularity": "saves follow popularity (Zipf)",
        "uniform": "same saves, spread uniformly",
    }
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for run, rows in figures["staleness"].items():
        hours = [r["hour"] for r in rows]
        ax.plot(hours, [r["stale_share"] for r in rows], marker="o", label=labels[run])
    if figures.get("comparable_with_article"):
        from kbes.sims import source

        hours = sorted(source.STALENESS)
        ax.plot(
            hours,
            [source.STALENESS[h]["stale_share"] for h in hours],
            linestyle="--",
            marker="x",
            color="grey",
            label="the article (popularity)",
        )
    p = figures["parameters"]
    ax.set_title(
        f"Stale citations per hour, {len(p['seeds'])} seed(s), {p['articles']} articles, "
        f"{p['saves']} saves"
    )
    ax.set_xlabel("hour of the simulated day")
    ax.set_ylabel("citations stale (%)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
