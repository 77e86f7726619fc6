"""What every command shares: the error guard and small argument helpers (the options they
share are in options.py)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, TextIO

import typer

from nmt.errors import UserError
from nmt.outputs import replacing
from nmt.reads import recording
from nmt.terminal import console_log

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


def guarded(action: Callable[[], object]) -> None:
    """Runs a command, its warnings on stderr, recording the files it reads (so that its
    outputs are checked against them); a UserError becomes a one-paragraph message and exit
    code 2."""
    try:
        with console_log(logging.WARNING), recording():
            action()
    except UserError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None
    except BrokenPipeError:  # what reads standard output went away (`| head`): as SIGPIPE
        _drop_standard_output()
        raise typer.Exit(141) from None


def _drop_standard_output() -> None:
    """Points standard output at /dev/null, so that Python's last flush of what is still
    buffered for the closed pipe does not fail again at exit."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


@contextlib.contextmanager
def output_stream(output: Path | None) -> Iterator[TextIO]:
    """Standard output, or the file `output`, replaced only once written in full."""
    if output is None:
        yield sys.stdout
    else:
        with replacing(output) as handle:
            yield handle


def checkpoint_inputs(
    checkpoints: list[Path] | Path | None, option: str = "--checkpoint"
) -> list[tuple[str, Path]]:
    """The files --checkpoint (or --then) options read (a run directory's best.pt), for
    check_output; one that is missing is left to the loading to name."""
    paths = [checkpoints] if isinstance(checkpoints, Path) else checkpoints or []
    return [(option, path / "best.pt" if path.is_dir() else path) for path in paths]
