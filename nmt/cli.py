"""The `nmt` command: parses arguments and calls one library function per command.

Heavy libraries (torch, datasets, sacrebleu) are imported inside the commands, so
`nmt --help` and argument errors answer at once.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, TextIO

import typer

from nmt.errors import UserError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Train, run and score attention-based neural machine translation models.",
)

ConfigOption = Annotated[Path, typer.Option("--config", "-c", help="Experiment YAML file.")]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="Override a config key, e.g. --set train.max_steps=500 (repeatable)."
    ),
]


def _guarded(action: Callable[[], object]) -> None:
    """Runs a command; a UserError becomes a one-paragraph message and exit code 2."""
    try:
        action()
    except UserError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None


@app.command()
def train(
    config: ConfigOption,
    set_: SetOption = None,
    run_dir: Annotated[
        Path | None,
        typer.Option(help="Where checkpoints and logs go (default: runs/<config name>)."),
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace a run already in --run-dir.")] = False,
    resume: Annotated[
        bool, typer.Option(help="Continue the run in --run-dir exactly where last.pt left it.")
    ] = False,
) -> None:
    """Train a model, validating with BLEU; ends by scoring the best checkpoint on the test split.

    Ctrl-C (SIGINT) or SIGTERM stops after the current step and saves last.pt; --resume goes on.
    Under torchrun, trains on every process with DistributedDataParallel.

    Example: nmt train --config configs/demo.yaml --set train.max_steps=300
    """

    def action() -> None:
        from nmt.config import load_config
        from nmt.train.experiment import train_experiment

        experiment = load_config(config, set_ or [])
        directory = run_dir or Path("runs") / experiment.name
        outcome = train_experiment(experiment, directory, overwrite=overwrite, resume=resume)
        if not outcome.is_main:
            return
        if outcome.reason == "interrupted":
            command = _resume_command(config, set_ or [], directory)
            typer.echo(f"stopped at step {outcome.step}, last.pt saved; resume with: {command}")
            return
        scores = outcome.scores
        if scores:
            typer.echo(
                f"test BLEU {scores['bleu']:.1f}  chrF {scores['chrf']:.1f}  "
                f"(best checkpoint: {directory / 'best.pt'})"
            )

    _guarded(action)


@app.command()
def translate(
    checkpoint: Annotated[
        list[Path],
        typer.Option(
            help="A .pt file written by nmt train; repeat it to translate with an ensemble."
        ),
    ],
    input: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            help="Source text, one sentence a line, translated in batches "
            "(default: stdin, translated line by line as it arrives).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where translations go (default: stdout)."),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(min=1, help="Sentences per batch (default: decode.batch_size)."),
    ] = None,
    beam: Annotated[int | None, typer.Option(help="Beam size; 1 is greedy search.")] = None,
    alpha: Annotated[
        float | None,
        typer.Option(help="Length penalty exponent: rank by score / ((5 + length) / 6) ** alpha."),
    ] = None,
    nbest: Annotated[
        int | None,
        typer.Option(help="Write N lines per input: 'INDEX ||| translation ||| score'."),
    ] = None,
    sample: Annotated[
        bool | None,
        typer.Option("--sample/--no-sample", help="Draw translations at random (nbest: draws)."),
    ] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
    top_k: Annotated[
        int | None,
        typer.Option(help="Sample from the K most likely tokens (0: all)."),
    ] = None,
    top_p: Annotated[
        float | None,
        typer.Option(help="Sample from the most likely tokens holding this probability mass."),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the sampling.")] = None,
    alignments: Annotated[
        bool, typer.Option(help="Append ' ||| ' and word alignments 'i-j' (source-target).")
    ] = False,
    attention_plots: Annotated[
        Path | None,
        typer.Option(help="Write an attention heatmap per input line here, DIR/INDEX.png."),
    ] = None,
) -> None:
    """Translate text with a checkpoint: one output line per input line, in input order.

    Unset options come from the checkpoint's decode section.

    Example: echo "ein Hund läuft ." | nmt translate --checkpoint runs/demo/best.pt --beam 5
    """

    def action() -> None:
        from nmt.data.splits import read_lines
        from nmt.decode.lines import line_batches, write_translations
        from nmt.decode.translator import load_translator

        _check_output_dir(output)
        batches = [read_lines(input)] if input else None
        settings = dict(
            batch_size=batch_size,
            beam=beam,
            alpha=alpha,
            nbest=nbest,
            sample=sample,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
        )
        translator, _ = load_translator(
            checkpoint, **{key: value for key, value in settings.items() if value is not None}
        )
        with _output_stream(output) as sink:
            write_translations(
                translator,
                batches or line_batches(sys.stdin.buffer),
                sink,
                alignments=alignments,
                plot_dir=attention_plots,
            )

    _guarded(action)


@app.command(name="eval")
def evaluate(
    checkpoint: Annotated[
        list[Path] | None,
        typer.Option(
            help="Translate the split with this checkpoint and score it; repeat to compare systems "
            "(paired bootstrap p-values against the first)."
        ),
    ] = None,
    split: Annotated[
        str, typer.Option(help="Which split to score: train, valid or test.")
    ] = "test",
    hyp: Annotated[Path | None, typer.Option(help="Hypothesis file to score.")] = None,
    ref: Annotated[Path | None, typer.Option(help="Reference file for --hyp.")] = None,
    set_: SetOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Score translations with sacrebleu (BLEU, chrF and their signatures).

    Examples: nmt eval --checkpoint runs/demo/best.pt --split test
              nmt eval --checkpoint runs/a/best.pt --checkpoint runs/b/best.pt
              nmt eval --hyp output.txt --ref reference.txt --json
    """

    def action() -> None:
        from nmt import scoring
        from nmt.decode.evaluation import checkpoint_split, evaluate
        from nmt.decode.translator import load_translator

        def translate_split(path: Path) -> tuple[list[str], list[str]]:
            translator, config = load_translator(path)
            text = checkpoint_split(config, split, set_ or [])
            return evaluate(translator, text).hypotheses, text.tgt

        if checkpoint and len(checkpoint) > 1:
            translated = [translate_split(c) for c in checkpoint]
            references = translated[0][1]
            if any(refs != references for _, refs in translated):
                raise UserError(
                    "the checkpoints' configs name different corpora for the "
                    f"{split} split; compare systems on the same references."
                )
            systems = [(str(c), hyps) for c, (hyps, _) in zip(checkpoint, translated, strict=True)]
            rows, signatures = scoring.compare(systems, references)
            typer.echo(
                json.dumps({"systems": [asdict(r) for r in rows], "signatures": signatures})
                if as_json
                else scoring.format_table(rows, signatures)
            )
            return
        if checkpoint:
            hypotheses, references = translate_split(checkpoint[0])
        elif hyp is not None and ref is not None:
            from nmt.data.splits import read_lines

            hypotheses, references = read_lines(hyp), read_lines(ref)
            if len(hypotheses) != len(references):
                raise UserError(
                    f"--hyp {hyp} has {len(hypotheses)} lines but --ref {ref} has "
                    f"{len(references)}; they must align line by line."
                )
        else:
            raise UserError("nmt eval needs --checkpoint, or both --hyp and --ref.")
        scores = scoring.score(hypotheses, references)
        typer.echo(json.dumps(scores.as_dict()) if as_json else scores.summary())

    _guarded(action)


@contextlib.contextmanager
def _output_stream(output: Path | None) -> Iterator[TextIO]:
    if output is None:
        yield sys.stdout
    else:
        with output.open("w", encoding="utf-8") as handle:
            yield handle


@app.command()
def average(
    checkpoints: Annotated[
        list[Path] | None,
        typer.Argument(help="Checkpoints to average, or with --last one run directory."),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="The averaged checkpoint.")] = ...,
    last: Annotated[
        int | None,
        typer.Option(min=1, help="Average the N newest step-*.pt of the run directory given."),
    ] = None,
) -> None:
    """Average the weights of checkpoints of one config into one that translates.

    Examples: nmt average --output avg.pt runs/demo/step-000500.pt runs/demo/step-001000.pt
              nmt average --output avg.pt --last 5 runs/demo
    """

    def action() -> None:
        from nmt.train.average import average_checkpoints, last_checkpoints

        _check_output_dir(output)
        paths = list(checkpoints or [])
        if last is not None:
            if len(paths) != 1:
                raise UserError("--last N takes exactly one run directory, e.g. --last 5 runs/demo")
            paths = last_checkpoints(paths[0], last)
        if not paths:
            raise UserError("nmt average needs checkpoints, or --last N and a run directory.")
        average_checkpoints(paths, output)
        typer.echo(f"averaged {len(paths)} checkpoints into {output}")

    _guarded(action)


@app.command()
def plot(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by nmt train.")],
    output: Annotated[
        Path | None, typer.Option(help="Directory for the PNG files (default: the run directory).")
    ] = None,
) -> None:
    """Plot train loss, valid loss and valid BLEU against step from RUN_DIR/metrics.jsonl.

    Example: nmt plot runs/demo --output plots/
    """

    def action() -> None:
        from nmt.plots import plot_curves

        for path in plot_curves(run_dir, output):
            typer.echo(str(path))

    _guarded(action)


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


def _check_output_dir(output: Path | None) -> None:
    if output is not None and not output.parent.is_dir():
        raise UserError(
            f"--output {output}: directory {output.parent} does not exist. Create it first."
        )


def main() -> None:
    app()
