"""What every command shares: the option types, the error guard and small argument helpers."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Literal, TextIO

import typer

from nmt.errors import UserError

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
MaxSrcLenOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        metavar="N",
        help="Cut sources longer than N subwords to N, with a warning (default: "
        "decode.max_src_len).",
    ),
]

NoRepeatNgramOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        metavar="N",
        help="No translation repeats an n-gram of N tokens (0: off; default: "
        "decode.no_repeat_ngram).",
    ),
]

CoveragePenaltyOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        metavar="BETA",
        help="Beam search ranks by GNMT's coverage penalty too, BETA * sum over source words "
        "of log min(attention received, 1) (0: off; default: decode.coverage_penalty).",
    ),
]

WorkersOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        metavar="N",
        help="Batches decoded side by side, each on one torch thread (default: one per core).",
    ),
]

TgtLangOption = Annotated[
    str | None,
    typer.Option(
        "--tgt-lang",
        metavar="LANG",
        help="The language to translate into, for a model trained to write several "
        "(data.directions); a model that writes one needs none.",
    ),
]

QuantizeOption = Annotated[
    Literal["int8"] | None,
    typer.Option(
        metavar="int8",
        help="Run with int8 weights: faster on CPUs, translations nearly always the same "
        "(default: float32).",
    ),
]


def guarded(action: Callable[[], object]) -> None:
    """Runs a command; a UserError becomes a one-paragraph message and exit code 2."""
    try:
        action()
    except UserError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None


def given(**settings: object) -> dict:
    """The options given on the command line: unset ones stay the checkpoint's."""
    return {key: value for key, value in settings.items() if value is not None}


@contextlib.contextmanager
def output_stream(output: Path | None) -> Iterator[TextIO]:
    if output is None:
        yield sys.stdout
    else:
        with output.open("w", encoding="utf-8") as handle:
            yield handle


def check_output_dir(output: Path | None) -> None:
    if output is not None and not output.parent.is_dir():
        raise UserError(
            f"--output {output}: directory {output.parent} does not exist. Create it first."
        )
