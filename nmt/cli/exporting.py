"""The command that exports a model for another runtime: `nmt export`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from nmt.cli.common import guarded


def export(
    checkpoint: Annotated[
        Path, typer.Option(metavar="FILE", help="A Transformer checkpoint written by nmt train.")
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", metavar="DIR", help="The model directory to create (new or empty)."
        ),
    ],
    format_: Annotated[
        Literal["ctranslate2"],
        typer.Option("--format", metavar="ctranslate2", help="The runtime to export for."),
    ] = "ctranslate2",
    shortlist: Annotated[
        int,
        typer.Option(
            min=0,
            metavar="K",
            help="Write the checkpoint's shortlist (nmt shortlist), each source piece's K best, "
            "as CTranslate2's vocabulary map, used by default (0: none).",
        ),
    ] = 0,
) -> None:
    """Export a Transformer checkpoint for CTranslate2: weights, vocabularies, SentencePiece
    model(s) and a README.txt on how to translate with it (needs pip install 'nmt[ctranslate2]').
    The examples export the demo Transformer: nmt train --config configs/demo_transformer.yaml.

    \b
    Examples:
      nmt export --format ctranslate2 --checkpoint runs/demo_transformer/best.pt \\
        --output exported/demo_transformer
      nmt translate --engine ctranslate2 --model exported/demo_transformer --input test.en
    """

    def action() -> None:
        from nmt.export.converter import export_ctranslate2

        directory = export_ctranslate2(checkpoint, output, shortlist)
        typer.echo(
            f"exported {checkpoint} to {directory} ({format_}); translate with: nmt translate "
            f"--engine ctranslate2 --model {directory}"
        )

    guarded(action)
