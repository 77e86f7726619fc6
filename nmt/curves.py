"""Training curves from RUN/metrics.jsonl: loss.png (train and valid loss) and bleu.png.

The train loss is label-smoothed and averaged over each log window; the valid loss is plain
cross-entropy per target token, so the two lines differ by roughly the smoothing term.
"""

from __future__ import annotations

import json
from pathlib import Path

from nmt.errors import UserError


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


def series(records: list[dict], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of the records that carry `key`."""
    points = [(r["step"], r[key]) for r in records if key in r and "step" in r]
    return [s for s, _ in points], [v for _, v in points]


def plot_curves(run_dir: Path, output: Path | None = None) -> list[Path]:
    """Writes loss.png and bleu.png into `output` (default: the run directory)."""
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
        "bleu.png": ("BLEU", [("valid BLEU", "valid_bleu")]),
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
        axes.set_title(f"{run_dir.name}: {ylabel}")
        axes.grid(alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend()
        figure.tight_layout()
        figure.savefig(output / name)
        plt.close(figure)
        written.append(output / name)
    return written
