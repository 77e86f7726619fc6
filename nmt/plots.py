"""The pictures nmt draws, as PNG files: attention heatmaps and training curves.

- `plot_attention`: source subwords across, target subwords down, the head average with a
  colour bar, then (multi-head) one small map per head.
- `plot_curves`: from RUN/metrics.jsonl, loss.png (train and valid loss) and bleu.png. The
  train loss is label-smoothed and averaged over each log window; the valid loss is plain
  cross-entropy per target token, so the two lines differ by roughly the smoothing term.
- `plot_comparison`: several runs overlaid, one line per run (labelled by its directory
  name, or its path where two names collide) and one colour per run throughout:
  compare_loss.png (rows: train loss, valid loss) and compare_bleu.png (valid BLEU), each
  row with two panels, against step and against minutes of training. The minutes are the
  `minutes` every log and validation record carries: wall-clock time since training began,
  validation included, counted across resumes. So "which variant learns faster per
  minute" is the right-hand panel.

matplotlib is imported inside the functions and draws with its Agg backend, so translating
without plots never pays for it and plotting works without a display.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from nmt.errors import UserError
from nmt.outputs import write_output

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HEAD_COLUMNS = 4
# The x axes of a comparison, one column each: (record key, axis label).
COMPARISON_AXES = (("step", "step"), ("minutes", "minutes of training (wall clock)"))
# A comparison's files, one row of panels per (axis label, record key).
COMPARISONS = {
    "compare_loss.png": (
        ("train loss per target token", "loss"),
        ("valid loss per target token", "valid_loss"),
    ),
    "compare_bleu.png": (("valid BLEU", "valid_bleu"),),
}


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
    # margins set from the labels' lengths: matplotlib's constrained layout, which measures
    # every label, took half of each plot's time
    figure = Figure(figsize=(width, height + grid_height))
    FigureCanvasAgg(figure)
    if heads == 1:
        _labelled_heatmap(figure, attention[:, 0], src_labels, tgt_labels, title)
        _margins(figure, width, height, src_labels, tgt_labels)
    else:
        average, grid = figure.subfigures(2, 1, height_ratios=[height, grid_height])
        subtitle = f"{title} (mean of {heads} heads)"
        _labelled_heatmap(average, attention.mean(1), src_labels, tgt_labels, subtitle)
        _margins(average, width, height, src_labels, tgt_labels)
        for head, panel in enumerate(grid.subplots(rows, HEAD_COLUMNS, squeeze=False).flat):
            panel.set_axis_off()
            if head < heads:
                panel.imshow(attention[:, head].numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
                panel.set_title(f"head {head}", fontsize=8)
        grid.subplots_adjust(left=0.02, right=0.98, bottom=0.02, top=0.92, hspace=0.35)
    save_png(figure, path, "--attention-plots")


def save_png(figure: Figure, path: Path, option: str) -> None:
    """`figure` as a PNG (100 dots an inch) at `path`, written as any output a command is
    asked for (nmt/outputs.py): whole or not at all, never over an input, a failure named by
    the `option` that chose the place."""
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=100)
    write_output(path, png.getbuffer(), option)


CHARACTER = 0.08  # inches a label's character takes at font size 9


def _margins(figure, width, height, src_labels, tgt_labels) -> None:
    """Room for the target labels and the axis title on the left, the rotated source labels
    below, the title above and the colour bar's labels on the right."""
    left = 0.45 + CHARACTER * max(map(len, tgt_labels), default=1)
    bottom = 0.5 + CHARACTER * max(map(len, src_labels), default=1)
    figure.subplots_adjust(
        left=min(left / width, 0.45),
        right=1 - min(0.9 / width, 0.3),
        bottom=min(bottom / height, 0.45),
        top=1 - min(0.35 / height, 0.2),
    )


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


def read_metrics(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise UserError(f"{run_dir} holds no metrics.jsonl; is it a run directory of nmt train?")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise UserError(f"{path}, line {number}: not a JSON record.") from None
    return records


def series(records: list[dict], key: str, x: str = "step") -> tuple[list[float], list[float]]:
    """(x values, values) of the records that carry both `x` (step or minutes) and `key`."""
    points = [(r[x], r[key]) for r in records if key in r and x in r]
    return [at for at, _ in points], [value for _, value in points]


def plot_curves(run_dir: Path, output: Path | None = None) -> list[Path]:
    """Writes loss.png and bleu.png into `output` (default: the run directory); a run of
    several directions draws each one's valid BLEU beside their mean."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(run_dir)
    output = output or run_dir
    output.mkdir(parents=True, exist_ok=True)
    figures = {
        "loss.png": (
            "loss per target token",
            [("train loss", "loss"), ("valid loss", "valid_loss")],
        ),
        "bleu.png": ("BLEU", [("valid BLEU", "valid_bleu"), *direction_lines(records)]),
    }
    written = []
    for name, (ylabel, lines) in figures.items():
        figure, axes = plt.subplots(figsize=(7, 4), dpi=100)
        for label, key in lines:
            steps, values = series(records, key)
            if steps:
                axes.plot(steps, values, marker="o" if len(steps) < 30 else None, label=label)
        axes.set_xlabel("step")
        axes.set_ylabel(ylabel)
        axes.set_title(f"{run_dir.name}{precision_shown(records)}: {ylabel}")
        axes.grid(alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend()
        figure.tight_layout()
        save_png(figure, output / name, "--output")
        plt.close(figure)
        written.append(output / name)
    return written


def precision_shown(records: list[dict]) -> str:
    """ " (bf16)": the precision a run trained in, as its validations record it ("" where
    none does: runs from before it was recorded)."""
    found = [record["precision"] for record in records if "precision" in record]
    return f" ({found[-1]})" if found else ""


def run_labels(run_dirs: Sequence[Path]) -> list[str]:
    """Each run's directory name, or its path where two runs' names collide."""
    names = [run_dir.resolve().name for run_dir in run_dirs]
    return [
        str(run_dir) if names.count(name) > 1 else name
        for run_dir, name in zip(run_dirs, names, strict=True)
    ]


def direction_lines(records: list[dict]) -> list[tuple[str, str]]:
    """(label, key) of each direction's valid BLEU (valid_bleu_de-en ...), if any."""
    keys = dict.fromkeys(
        key for record in records for key in record if key.startswith("valid_bleu_")
    )
    return [(f"valid BLEU {key.removeprefix('valid_bleu_')}", key) for key in keys]


def plot_comparison(run_dirs: Sequence[Path], output: Path) -> list[Path]:
    """Writes compare_loss.png and compare_bleu.png of several runs into `output`."""
    resolved = [run_dir.resolve() for run_dir in run_dirs]
    for run_dir, path in zip(run_dirs, resolved, strict=True):
        if resolved.count(path) > 1:
            raise UserError(f"{run_dir} is given more than once; name each run directory once.")
    runs = {}
    for label, run_dir in zip(run_labels(run_dirs), run_dirs, strict=True):
        records = read_metrics(run_dir)
        runs[label + precision_shown(records)] = records
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for name, rows in COMPARISONS.items():
        save_png(comparison_figure(runs, rows), output / name, "--output")
        written.append(output / name)
    return written


def comparison_figure(runs: dict[str, list[dict]], rows: Sequence[tuple[str, str]]) -> Figure:
    """One row of panels per (axis label, record key) in `rows`, one column per x axis of
    COMPARISON_AXES, one line per run of `runs` (label -> records) that has such points."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 0.5 + 3.5 * len(rows)), layout="constrained")
    FigureCanvasAgg(figure)
    panels = figure.subplots(len(rows), len(COMPARISON_AXES), squeeze=False)
    for (ylabel, key), row in zip(rows, panels, strict=True):
        for (x, xlabel), axes in zip(COMPARISON_AXES, row, strict=True):
            for colour, (label, records) in enumerate(runs.items()):
                xs, values = series(records, key, x)
                if xs:
                    marker = "o" if len(xs) < 30 else None
                    axes.plot(xs, values, color=f"C{colour}", marker=marker, label=label)
            axes.set_xlabel(xlabel)
            axes.set_ylabel(ylabel)
            axes.grid(alpha=0.3)
            if axes.lines:
                axes.legend(fontsize=8)
    return figure
