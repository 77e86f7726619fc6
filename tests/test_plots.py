"""`nmt plot`: PNG curves of train loss, valid loss and valid BLEU against step."""

import json

from typer.testing import CliRunner

from nmt.cli import app
from nmt.plots import read_metrics, series

PNG = b"\x89PNG\r\n\x1a\n"


def write_metrics(run_dir):
    records = [
        {"step": 50, "epoch": 0, "loss": 5.1, "lr": 0.001},
        {"step": 100, "epoch": 0, "loss": 4.2, "lr": 0.001},
        {"step": 100, "valid_loss": 4.0, "valid_bleu": 3.5},
        {"step": 150, "epoch": 1, "loss": 3.7, "lr": 0.001},
        {"step": 200, "valid_loss": 3.6, "valid_bleu": 7.25},
        {"step": 200, "test_bleu": 7.0, "test_bleu_signature": "nrefs:1"},
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_series_pick_the_records_that_carry_a_key(tmp_path):
    write_metrics(tmp_path)
    records = read_metrics(tmp_path)
    assert series(records, "loss") == ([50, 100, 150], [5.1, 4.2, 3.7])
    assert series(records, "valid_bleu") == ([100, 200], [3.5, 7.25])


def test_plot_writes_png_files(tmp_path):
    write_metrics(tmp_path)
    result = CliRunner().invoke(app, ["plot", str(tmp_path), "--output", str(tmp_path / "png")])
    assert result.exit_code == 0, result.output
    for name in ("loss.png", "bleu.png"):
        assert (tmp_path / "png" / name).read_bytes().startswith(PNG)
        assert str(tmp_path / "png" / name) in result.output


def test_plot_without_metrics_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 2 and "no metrics.jsonl" in result.output
