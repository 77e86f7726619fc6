"""`nmt plot`: PNG curves of train loss, valid loss and valid BLEU against step, and of
several runs overlaid against step and against minutes of training."""

import json

from typer.testing import CliRunner

from nmt.cli import app
from nmt.plots import COMPARISONS, comparison_figure, read_metrics, run_labels, series

PNG = b"\x89PNG\r\n\x1a\n"


def write_metrics(run_dir, minutes_per_step=0.01, bleu_gain=0.0):
    """Records as nmt train writes them: log and validation records carry `minutes`."""
    records = [
        {"step": 50, "epoch": 0, "loss": 5.1, "lr": 0.001},
        {"step": 100, "epoch": 0, "loss": 4.2, "lr": 0.001},
        {"step": 100, "valid_loss": 4.0, "valid_bleu": 3.5 + bleu_gain},
        {"step": 150, "epoch": 1, "loss": 3.7, "lr": 0.001},
        {"step": 200, "valid_loss": 3.6, "valid_bleu": 7.25 + bleu_gain},
    ]
    for record in records:
        record["minutes"] = round(record["step"] * minutes_per_step, 2)
    records.append({"step": 200, "test_bleu": 7.0, "test_bleu_signature": "nrefs:1"})
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_series_pick_the_records_that_carry_a_key(tmp_path):
    write_metrics(tmp_path)
    records = read_metrics(tmp_path)
    assert series(records, "loss") == ([50, 100, 150], [5.1, 4.2, 3.7])
    assert series(records, "valid_bleu") == ([100, 200], [3.5, 7.25])
    assert series(records, "valid_bleu", "minutes") == ([1.0, 2.0], [3.5, 7.25])


def test_plot_writes_png_files(tmp_path):
    write_metrics(tmp_path)
    result = CliRunner().invoke(app, ["plot", str(tmp_path), "--output", str(tmp_path / "png")])
    assert result.exit_code == 0, result.output
    for name in ("loss.png", "bleu.png"):
        assert (tmp_path / "png" / name).read_bytes().startswith(PNG)
        assert str(tmp_path / "png" / name) in result.output
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == ["bleu.png", "loss.png"]


def test_a_picture_that_cannot_be_written_is_named(tmp_path):
    write_metrics(tmp_path)
    (tmp_path / "png" / "bleu.png").mkdir(parents=True)
    result = CliRunner().invoke(app, ["plot", str(tmp_path), "--output", str(tmp_path / "png")])
    assert result.exit_code == 2 and "bleu.png is a directory" in " ".join(result.output.split())


def test_plot_without_metrics_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 2 and "no metrics.jsonl" in result.output


def test_runs_are_labelled_by_name_or_by_path_where_names_collide(tmp_path):
    runs = [tmp_path / "a" / "rnnsearch", tmp_path / "b" / "rnnsearch", tmp_path / "multihead"]
    assert run_labels(runs) == [str(runs[0]), str(runs[1]), "multihead"]


def test_comparison_draws_one_line_per_run_against_step_and_minutes(tmp_path):
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    write_metrics(fast, minutes_per_step=0.01)
    write_metrics(slow, minutes_per_step=0.03, bleu_gain=1.0)
    runs = {"fast": read_metrics(fast), "slow": read_metrics(slow)}
    for rows in COMPARISONS.values():
        figure = comparison_figure(runs, rows)
        panels = figure.axes
        assert len(panels) == 2 * len(rows)  # per row: against step, against minutes
        for number, axes in enumerate(panels):
            key, x = rows[number // 2][1], ("step", "minutes")[number % 2]
            assert [line.get_label() for line in axes.get_lines()] == ["fast", "slow"]
            for line in axes.get_lines():
                xs, values = series(runs[line.get_label()], key, x)
                assert list(line.get_xdata()) == xs and list(line.get_ydata()) == values
    minutes_panel = comparison_figure(runs, COMPARISONS["compare_bleu.png"]).axes[1]
    fast_line, slow_line = minutes_panel.get_lines()
    assert list(fast_line.get_xdata()) == [1.0, 2.0] and list(slow_line.get_xdata()) == [3.0, 6.0]


def test_plot_of_several_runs_writes_the_comparison(tmp_path):
    write_metrics(tmp_path / "rnnsearch")
    write_metrics(tmp_path / "multihead", minutes_per_step=0.02)
    runs = [str(tmp_path / "rnnsearch"), str(tmp_path / "multihead")]
    result = CliRunner().invoke(app, ["plot", *runs, "--output", str(tmp_path / "png")])
    assert result.exit_code == 0, result.output
    names = ["compare_bleu.png", "compare_loss.png"]
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == names
    for name in names:
        data = (tmp_path / "png" / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 1000
        assert str(tmp_path / "png" / name) in result.output


def test_plot_of_several_runs_writes_into_the_current_directory(tmp_path, monkeypatch):
    write_metrics(tmp_path / "runs" / "a")
    write_metrics(tmp_path / "runs" / "b")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["plot", "runs/a", "runs/b"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "compare_bleu.png").read_bytes().startswith(PNG)
    assert (tmp_path / "compare_loss.png").read_bytes().startswith(PNG)


def test_comparison_names_the_run_without_metrics(tmp_path):
    write_metrics(tmp_path / "good")
    (tmp_path / "empty").mkdir()
    runs = [str(tmp_path / "good"), str(tmp_path / "empty")]
    result = CliRunner().invoke(app, ["plot", *runs, "--output", str(tmp_path / "png")])
    assert result.exit_code == 2
    assert f"{tmp_path / 'empty'} holds no metrics.jsonl" in result.output


def test_comparison_refuses_a_run_given_twice(tmp_path):
    write_metrics(tmp_path / "run")
    runs = [str(tmp_path / "run"), str(tmp_path / "run") + "/"]
    result = CliRunner().invoke(app, ["plot", *runs, "--output", str(tmp_path / "png")])
    assert result.exit_code == 2 and "given more than once" in result.output
