"""The command that learns a checkpoint's vocabulary shortlist: `nmt shortlist`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmt.cli.common import guarded
from nmt.cli.options import CHECKPOINT_HELP


def shortlist(
    checkpoint: Annotated[Path, typer.Option(metavar="FILE", help=CHECKPOINT_HELP + ".")],
    data: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The corpus directory to learn from (default: the checkpoint's data.path).",
        ),
    ] = None,
    depth: Annotated[
        int,
        typer.Option(
            min=1, metavar="N", help="Candidates kept per source piece (--shortlist K's most)."
        ),
    ] = 100,
    frequent: Annotated[
        int,
        typer.Option(min=0, metavar="N", help="The most frequent target pieces, always allowed."),
    ] = 100,
    max_pairs: Annotated[
        int,
        typer.Option(min=1, metavar="N", help="Training pairs read per direction (the first N)."),
    ] = 200_000,
) -> None:
    """Learn which target pieces each source piece translates into (IBM Model 1 on the
    training pairs) and write the shortlist beside the checkpoint (best.pt ->
    best.shortlist.pt). `--shortlist K` on translate, eval and serve then computes the output
    layer only for each batch's candidates: its source pieces' K best, the frequent pieces,
    the special ones and those its constraints name.

    \b
    Examples:
      nmt shortlist --checkpoint runs/demo_transformer/best.pt
      nmt translate --checkpoint runs/demo_transformer/best.pt --shortlist 50 --input test.en
    """

    def action() -> None:
        from nmt.corpus.shortlist_learning import build_shortlist

        built, path = build_shortlist(checkpoint, data, depth, frequent, max_pairs)
        covered = int((built.candidates[:, 0] >= 0).sum())
        typer.echo(
            f"wrote {path}: up to {built.depth} candidates for each of {covered} source "
            f"pieces, {built.frequent.numel()} frequent pieces; translate with --shortlist K "
            f"(K <= {built.depth})"
        )

    guarded(action)
