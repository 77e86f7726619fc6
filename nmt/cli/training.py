"""The commands around training: `nmt train`, `nmt average`, `nmt plot`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmt.cli.common import ConfigOption, SetOption, guarded
from nmt.errors import UserError
from nmt.outputs import check_output


def train(
    config: ConfigOption,
    set_: SetOption = None,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Where checkpoints and logs go (default: runs/<config name>)."
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace a run already in --run-dir.")] = False,
    resume: Annotated[
        bool, typer.Option(help="Continue the run in --run-dir exactly where last.pt left it.")
    ] = False,
) -> None:
    """Train a model, validating with BLEU; ends by scoring the best checkpoint on the test split.

    Ctrl-C (SIGINT) or SIGTERM stops after the current step and saves last.pt; --resume goes on.
    Under torchrun, trains on every process with DistributedDataParallel.

    \b
    Examples:
      nmt train --config configs/demo.yaml --set train.max_steps=300
      nmt train --config configs/demo.yaml --run-dir runs/demo --resume
      nmt train --config configs/demo.yaml --set model.encoder.type=self_attention \\
        --set model.decoder.type=transformer --run-dir runs/demo_switched
      nmt train --config configs/demo.yaml --run-dir runs/demo_legal \\
        --set train.init_from=runs/demo --set train.adapters.type=lora
    """

    def action() -> None:
        from nmt.train.experiment import train_run

        outcome = train_run(config, set_ or [], run_dir, overwrite=overwrite, resume=resume)
        if not outcome.is_main:
            return
        if outcome.reason == "interrupted":
            command = _resume_command(config, set_ or [], outcome.run_dir)
            typer.echo(f"{outcome.summary}; last.pt saved, resume with: {command}")
            return
        scores = outcome.scores
        if scores:
            typer.echo(
                f"test BLEU {scores['bleu']:.1f}  chrF {scores['chrf']:.1f}  "
                f"TER {scores['ter']:.1f}  "
                f"(best checkpoint: {outcome.run_dir / 'best.pt'})"
            )
        typer.echo(outcome.summary)

    guarded(action)


def average(
    checkpoints: Annotated[
        list[Path] | None,
        # hidden: Typer would print its type, <list[Path]>; the docstring says what PATH is
        typer.Argument(metavar="PATH", hidden=True),
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="FILE", help="The averaged checkpoint.")
    ] = ...,
    last: Annotated[
        int | None,
        typer.Option(
            min=1, metavar="N", help="Average the N newest step-*.pt of the run directory given."
        ),
    ] = None,
) -> None:
    """Average the weights of checkpoints of one config into one that translates.

    Each PATH is a checkpoint; with --last N, PATH is one run directory.

    \b
    Examples:
      nmt average --output avg.pt runs/demo/step-000500.pt runs/demo/step-001000.pt
      nmt average --output avg.pt --last 2 runs/demo
    """

    def action() -> None:
        from nmt.train.average import average_checkpoints, last_checkpoints

        paths = list(checkpoints or [])
        if last is not None:
            if len(paths) != 1:
                raise UserError("--last N takes exactly one run directory, e.g. --last 5 runs/demo")
            paths = last_checkpoints(paths[0], last)
        if not paths:
            raise UserError("nmt average needs checkpoints, or --last N and a run directory.")
        check_output(output, "--output", [("PATH", path) for path in paths])
        average_checkpoints(paths, output)
        typer.echo(f"averaged {len(paths)} checkpoints into {output}")

    guarded(action)


def plot(
    run_dirs: Annotated[
        list[Path],
        # hidden: Typer would print its type, <list[Path]>; the docstring says what RUN_DIR is
        typer.Argument(metavar="RUN_DIR", hidden=True),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Directory for the PNG files (default: the run directory with one run, "
            "the current directory with several).",
        ),
    ] = None,
) -> None:
    """Plot train loss, valid loss and valid BLEU from RUN_DIR/metrics.jsonl, or compare runs.

    Each RUN_DIR is a run directory written by nmt train. With one, loss.png and bleu.png
    (against step) go into it, or into --output. With several, compare_loss.png (train and
    valid loss) and compare_bleu.png (valid BLEU) overlay them, one line per run labelled by
    its directory name, each in two panels: against step and against minutes of training
    (wall clock, validation included); they go into the current directory, or into --output.

    \b
    Examples:
      nmt plot runs/demo
      nmt plot runs/demo --output plots/
      nmt plot runs/demo runs/demo_transformer --output plots/
    """

    def action() -> None:
        from nmt.plots import plot_comparison, plot_curves

        if len(run_dirs) == 1:
            paths = plot_curves(run_dirs[0], output)
        else:
            paths = plot_comparison(run_dirs, output or Path("."))
        for path in paths:
            typer.echo(str(path))

    guarded(action)


def _resume_command(config: Path, overrides: list[str], run_dir: Path) -> str:
    """The command line that continues an interrupted run (under torchrun if it ran there)."""
    import os
    import shlex

    sets = [arg for override in overrides for arg in ("--set", override)]
    args = ["train", "--config", str(config), *sets, "--run-dir", str(run_dir), "--resume"]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        per_node = os.environ.get("LOCAL_WORLD_SIZE", str(world))
        prefix = ["torchrun", f"--nproc_per_node={per_node}", "-m", "nmt"]
    else:
        prefix = ["nmt"]
    return shlex.join([*prefix, *args])
