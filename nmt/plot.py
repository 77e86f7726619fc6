"""Attention heatmaps as PNG files: source subwords across, target subwords down.

matplotlib is imported inside the function and draws with its Agg backend on a Figure of its
own (no pyplot, no global state), so translating without plots never pays for it and plotting
works without a display.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import torch

HEAD_COLUMNS = 4


def plot_attention(
    attention: torch.Tensor,
    src_labels: Sequence[str],
    tgt_labels: Sequence[str],
    path: Path,
    title: str = "",
) -> None:
    """attention [T, H, S] -> PNG: the head average with a colour bar, then (H > 1) each head."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    steps, heads, src_len = attention.shape
    cell = 0.32  # inches per source or target subword
    width = max(4.0, 2.0 + cell * src_len)
    height = max(3.0, 1.5 + cell * steps)
    rows = math.ceil(heads / HEAD_COLUMNS) if heads > 1 else 0
    # a head panel is a quarter of the width with square cells, plus its title
    grid_height = rows * (width / HEAD_COLUMNS * steps / src_len + 0.3)
    figure = Figure(figsize=(width, height + grid_height), layout="constrained")
    FigureCanvasAgg(figure)
    if heads == 1:
        _labelled_heatmap(figure, attention[:, 0], src_labels, tgt_labels, title)
    else:
        average, grid = figure.subfigures(2, 1, height_ratios=[height, grid_height])
        subtitle = f"{title} (mean of {heads} heads)"
        _labelled_heatmap(average, attention.mean(1), src_labels, tgt_labels, subtitle)
        for head, panel in enumerate(grid.subplots(rows, HEAD_COLUMNS, squeeze=False).flat):
            panel.set_axis_off()
            if head < heads:
                panel.imshow(attention[:, head].numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
                panel.set_title(f"head {head}", fontsize=8)
    figure.savefig(path, dpi=100)


def _labelled_heatmap(
    figure, weights: torch.Tensor, src_labels: Sequence[str], tgt_labels: Sequence[str], title: str
) -> None:
    """weights [T, S] with a subword on every tick and a colour bar, on a (sub)figure."""
    axes = figure.subplots()
    image = axes.imshow(weights.numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
    axes.set_xticks(range(len(src_labels)), labels=src_labels, rotation=90, fontsize=9)
    axes.set_yticks(range(len(tgt_labels)), labels=tgt_labels, fontsize=9)
    axes.set_xlabel("source")
    axes.set_ylabel("target")
    axes.set_title(title, fontsize=10)
    figure.colorbar(image, ax=axes, label="attention weight", shrink=0.8)
