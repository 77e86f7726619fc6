"""The `nmt` command: parses arguments and calls one library function per command.

Heavy libraries (torch, datasets, sacrebleu) are imported inside the commands, so
`nmt --help` and argument errors answer at once.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
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

# Every option names its value the way the README does (FILE, DIR, N, ...): Typer's own
# placeholders are Python types (<path>, <list[Path]>).
ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", metavar="FILE", help="Experiment YAML file.")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override a config key, e.g. --set train.max_steps=500 (repeatable).",
    ),
]
# The decoding options translate and eval share; unset, they come from the checkpoint.
BatchSizeOption = Annotated[
    int | None,
    typer.Option(min=1, metavar="N", help="Sentences per batch (default: decode.batch_size)."),
]
BeamOption = Annotated[int | None, typer.Option(metavar="K", help="Beam size; 1 is greedy search.")]
AlphaOption = Annotated[
    float | None,
    typer.Option(
        metavar="A",
        help="Length penalty exponent: rank by score / ((5 + length) / 6) ** alpha.",
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
            metavar="FILE",
            help="A .pt file written by nmt train; repeat it to translate with an ensemble.",
        ),
    ],
    input: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            metavar="FILE",
            help="Source text, one sentence a line, translated in batches "
            "(default: stdin, translated line by line as it arrives).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Where translations go (default: stdout)."
        ),
    ] = None,
    batch_size: BatchSizeOption = None,
    beam: BeamOption = None,
    alpha: AlphaOption = None,
    nbest: Annotated[
        int | None,
        typer.Option(
            metavar="N", help="Write N lines per input: 'INDEX ||| translation ||| score'."
        ),
    ] = None,
    sample: Annotated[
        bool | None,
        typer.Option("--sample/--no-sample", help="Draw translations at random (nbest: draws)."),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(metavar="T", help="Sampling temperature.")
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option(metavar="K", help="Sample from the K most likely tokens (0: all)."),
    ] = None,
    top_p: Annotated[
        float | None,
        typer.Option(
            metavar="P", help="Sample from the most likely tokens holding this probability mass."
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(metavar="S", help="Seed of the sampling.")] = None,
    alignments: Annotated[
        bool, typer.Option(help="Append ' ||| ' and word alignments 'i-j' (source-target).")
    ] = False,
    attention_plots: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Write an attention heatmap per input line here, DIR/INDEX.png."
        ),
    ] = None,
) -> None:
    """Translate text with a checkpoint: one output line per input line, in input order.

    Unset options come from the checkpoint's decode section.

    \b
    Examples:
      echo "ein Hund läuft ." | nmt translate --checkpoint runs/demo/best.pt --beam 5
      nmt translate --checkpoint runs/demo/best.pt --input test.en --output test.hyp
    """

    def action() -> None:
        from nmt.data.splits import read_lines
        from nmt.decode.lines import line_batches, write_translations
        from nmt.decode.translator import load_translator

        _check_output_dir(output)
        batches = [read_lines(input)] if input else None
        settings = _given(
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
        translator, _ = load_translator(checkpoint, **settings)
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
            metavar="FILE",
            help="Translate the test set with this checkpoint and score it; repeat to compare "
            "systems (paired bootstrap p-values against the first).",
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(
            metavar="SPLIT",
            help="Which split of the checkpoint's corpus to score: train, valid or test "
            "(default: test).",
        ),
    ] = None,
    src: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Source side of a test set of your own, instead of --split."
        ),
    ] = None,
    hyp: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Translations made elsewhere, to score."),
    ] = None,
    ref: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Reference translations of --src's or --hyp's lines."),
    ] = None,
    batch_size: BatchSizeOption = None,
    beam: BeamOption = None,
    alpha: AlphaOption = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Amend the checkpoint's config to find --split, e.g. --set data.path=DIR "
            "(repeatable).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Score translations with sacrebleu (BLEU, chrF and their signatures).

    A checkpoint translates a split of its corpus (--split, default test) or a test set of
    your own (--src and --ref); unset decoding options come from its decode section. --hyp
    scores translations made elsewhere.

    \b
    Examples:
      nmt eval --checkpoint runs/demo/best.pt --split test --beam 1
      nmt eval --checkpoint runs/demo/best.pt --src test.en --ref test.de
      nmt eval --checkpoint runs/a/best.pt --checkpoint runs/b/best.pt
      nmt eval --hyp output.txt --ref reference.txt --json
    """

    def action() -> None:
        from nmt.decode.evaluation import read_test_set, score_checkpoints, score_files

        decode = _given(batch_size=batch_size, beam=beam, alpha=alpha)
        _check_eval_options(checkpoint, split, src, hyp, ref, set_, decode)
        if hyp is not None:
            report = score_files(hyp, ref)
        else:
            test_set = read_test_set(src, ref) if src is not None else None
            report = score_checkpoints(checkpoint, test_set, split or "test", set_ or [], **decode)
        typer.echo(json.dumps(report.as_dict()) if as_json else report.summary())

    _guarded(action)


def _check_eval_options(
    checkpoint: list[Path] | None,
    split: str | None,
    src: Path | None,
    hyp: Path | None,
    ref: Path | None,
    overrides: list[str] | None,
    decode: dict,
) -> None:
    """Refuses option combinations of nmt eval that are incomplete, or that it would ignore."""
    if hyp is not None:
        if checkpoint or src is not None:
            raise UserError(
                "--hyp scores translations made elsewhere; --checkpoint (with --split or "
                "--src) makes its own. Give one or the other."
            )
        unused = [f"--{key.replace('_', '-')}" for key in decode]
        if split is not None:
            unused.append("--split")
        if overrides:
            unused.append("--set")
        if unused:
            raise UserError(
                "--hyp scores translations made elsewhere, so nothing is decoded and no corpus "
                f"is read: drop {' and '.join(unused)}, or score a --checkpoint instead."
            )
        if ref is None:
            raise UserError("--hyp needs --ref, the reference translations to score it against.")
        return
    if not checkpoint:
        raise UserError(
            "nmt eval needs --checkpoint (with --split, or --src and --ref), or --hyp and --ref."
        )
    if src is None:
        if ref is not None:
            raise UserError(
                "--ref needs --src (a source file for --checkpoint to translate) "
                "or --hyp (translations to score)."
            )
        return
    if ref is None:
        raise UserError(f"--src {src} needs --ref, the reference translations of its lines.")
    if split is not None:
        raise UserError(
            "--src and --ref give the test set, so --split (a split of the checkpoint's corpus) "
            "does not apply. Give one or the other."
        )
    if overrides:
        raise UserError(
            "--src and --ref give the test set, so --set (which amends the checkpoint's config "
            "to find --split) does not apply. Drop it."
        )


def _given(**settings: object) -> dict:
    """The options given on the command line: unset ones stay the checkpoint's."""
    return {key: value for key, value in settings.items() if value is not None}


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
    run_dir: Annotated[
        Path,
        # hidden: Typer would print its type, <path>; the docstring says what RUN_DIR is
        typer.Argument(metavar="RUN_DIR", hidden=True),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Directory for the PNG files (default: the run directory)."
        ),
    ] = None,
) -> None:
    """Plot train loss, valid loss and valid BLEU against step from RUN_DIR/metrics.jsonl.

    RUN_DIR is a run directory written by nmt train; loss.png and bleu.png go into it, or
    into --output.

    \b
    Examples:
      nmt plot runs/demo
      nmt plot runs/demo --output plots/
    """

    def action() -> None:
        from nmt.plots import plot_curves

        for path in plot_curves(run_dir, output):
            typer.echo(str(path))

    _guarded(action)


@app.command()
def serve(
    checkpoint: Annotated[
        list[str],
        typer.Option(
            metavar="[ID=]FILE",
            help="A .pt file written by nmt train, served under its run name or ID; "
            "repeat to serve several models.",
        ),
    ],
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Address to listen on (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, metavar="N", help="Port.")] = 5000,
    api_key: Annotated[
        str | None,
        typer.Option(
            metavar="KEY",
            envvar="NMT_API_KEY",
            help="Require 'Authorization: Bearer KEY' on every API route but health "
            "(or set NMT_API_KEY, which ps does not show).",
        ),
    ] = None,
    max_sentences: Annotated[
        int, typer.Option(min=1, metavar="N", help="Most sentences one request may hold.")
    ] = 64,
    max_body_kib: Annotated[
        int, typer.Option(min=1, metavar="N", help="Largest request body, in KiB.")
    ] = 1024,
    threads: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="Torch threads (default: all cores but one)."),
    ] = None,
) -> None:
    """Serve models over HTTP: OpenNMT-py's API at /translator, a web page at /.

    Decoding options default to each checkpoint's decode section; requests may set beam and
    n_best. SIGTERM finishes the requests in flight, then exits 0.

    \b
    Examples:
      nmt serve --checkpoint runs/demo/best.pt
      nmt serve --checkpoint base=runs/a/best.pt --checkpoint big=runs/b/best.pt --port 8080
      curl -d '[{"src": "ein Hund läuft .", "id": "demo"}]' localhost:5000/translator/translate
    """

    def action() -> None:
        from nmt.decode.server import Limits, serve

        limits = Limits(max_sentences=max_sentences, max_body_bytes=max_body_kib * 1024)
        serve(checkpoint, host, port, api_key, limits, threads)

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
