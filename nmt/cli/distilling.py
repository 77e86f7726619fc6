"""The command that distils a corpus: `nmt distill`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmt.cli.common import guarded
from nmt.cli.decoding_options import COMPUTING, PIVOTING, RESTRICTING, SEARCH
from nmt.cli.options import QuantizeOption, WorkersOption, checkpoints_option, decoding
from nmt.errors import UserError


@decoding(*SEARCH, *COMPUTING, *PIVOTING, *RESTRICTING, "coverage_penalty")
def distill(
    checkpoint: checkpoints_option("distil with an ensemble") = None,
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The corpus directory to write (new or empty), or an unfinished one to finish.",
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The corpus whose train split to translate (default: the first checkpoint's "
            "own: its data.path, demo or hub dataset).",
        ),
    ] = None,
    quantize: QuantizeOption = None,
    workers: WorkersOption = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Start afresh, replacing the distillation in --out (one made with other "
            "teachers or settings is refused without it).",
        ),
    ] = False,
    decode: dict | None = None,
) -> None:
    """Translate the train split of a corpus with a teacher (sequence-level knowledge
    distillation, Kim & Rush 2016) into a corpus directory that nmt train reads: the
    sources, the teacher's translations as targets, the valid and test splits as they were,
    and manifest.json. Every direction of a multilingual teacher is distilled. Run the same
    command again to finish an interrupted distillation. Unset options come from the first
    checkpoint's decode section.

    \b
    Examples:
      nmt distill --checkpoint runs/demo --out distilled/demo
      nmt distill --checkpoint runs/demo --checkpoint runs/demo_transformer --beam 4 \\
        --out distilled/ensemble
      nmt train --config configs/demo.yaml --set data.path=distilled/demo --run-dir runs/student
    """

    def action() -> None:
        from nmt.corpus.distill import distil

        if not checkpoint:
            raise UserError("nmt distill needs --checkpoint FILE (repeat it for an ensemble).")
        if out is None:
            raise UserError("nmt distill needs --out DIR, the corpus directory to write.")
        done = distil(checkpoint, out, data, workers, quantize, overwrite, **decode)
        pairs = ", ".join(
            f"{d.name} {d.lines} pairs ({d.source}, {d.target})" for d in done.manifest.directions
        )
        if done.translated == 0:
            typer.echo(f"{out} is complete already: {pairs}")
            return
        finished = f"finished {out} ({done.earlier} lines were translated before)"
        typer.echo(
            f"{finished if done.earlier else f'wrote {out}'}: {pairs}; valid and test: "
            f"{', '.join(done.manifest.copied)}. Train a student on it: nmt train --config "
            f"FILE --set data.path={out}"
        )

    guarded(action)
