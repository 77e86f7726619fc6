"""`nmt tm build`: a translation memory of a parallel corpus, for --tm."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from nmt.cli.common import guarded

tm_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Translation memories: past translations that --tm finds again.",
)


@tm_app.command()
def build(
    data: Annotated[Path, typer.Option(metavar="DIR", help="The corpus directory.")],
    src_lang: Annotated[str, typer.Option(metavar="LANG", help="The source language.")],
    tgt_lang: Annotated[str, typer.Option(metavar="LANG", help="The target language.")],
    out: Annotated[Path, typer.Option(metavar="FILE", help="The memory to write (.npz).")],
    split: Annotated[
        str, typer.Option(metavar="NAME", help="The split whose pairs it holds.")
    ] = "train",
) -> None:
    """Build a translation memory from a split of a parallel corpus: exact matches come
    back as they are, fuzzy ones feed a model trained with data.fuzzy_matches.

    \b
    Examples:
      nmt tm build --data corpus --src-lang en --tgt-lang de --out tm.npz
      nmt tm build --data corpus --src-lang en --tgt-lang de --split valid --out valid.npz
    """

    def action() -> None:
        from nmt.corpus.memory_build import build_memory

        started = time.perf_counter()
        memory = build_memory(data, src_lang, tgt_lang, out, split)
        seconds = time.perf_counter() - started
        size = out.stat().st_size / 2**20
        typer.echo(
            f"{len(memory)} {src_lang}-{tgt_lang} pairs of {data} ({split}) into {out}: "
            f"{size:.1f} MiB in {seconds:.1f} s"
        )

    guarded(action)
