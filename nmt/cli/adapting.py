"""`nmt adapter merge`: an adapter run folded into its base, as a plain checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmt.cli.common import guarded

adapter_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Work with adapter checkpoints (runs of train.adapters).",
)


@adapter_app.command()
def merge(
    adapter: Annotated[
        Path,
        typer.Argument(
            metavar="ADAPTER", help="An adapter checkpoint: a run directory or a .pt file."
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="FILE", help="The merged checkpoint.")
    ],
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="The base (default: the one the adapter was trained on, where it was).",
        ),
    ] = None,
) -> None:
    """Fold a LoRA adapter into its base: a plain checkpoint that translates, exports
    (CTranslate2, transformers) and trains on as any other.

    \b
    Examples:
      nmt adapter merge runs/demo_legal --output legal.pt
      nmt adapter merge runs/demo_legal/best.pt --checkpoint runs/demo/best.pt -o legal.pt
    """

    def action() -> None:
        from nmt.train.merge import merge_adapter

        merge_adapter(adapter, output, checkpoint)
        typer.echo(f"merged {adapter} into its base: {output}")

    guarded(action)
