"""The commands that take a model out to another runtime (`nmt export`) and bring one in
(`nmt import`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from nmt.cli.common import guarded
from nmt.errors import UserError


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
        Literal["ctranslate2", "transformers"],
        typer.Option(
            "--format",
            metavar="ctranslate2|transformers",
            help="The runtime to export for: CTranslate2, or Hugging Face transformers "
            "(Marian for post-norm models, Pegasus for pre-norm ones).",
        ),
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
    """Export a Transformer checkpoint for CTranslate2 (weights, vocabularies, SentencePiece
    model(s) and a README.txt on how to translate with it; pip install 'nmt[ctranslate2]') or
    for Hugging Face transformers (a directory AutoModelForSeq2SeqLM, AutoTokenizer and
    pipeline("translation") load, with a model card; pip install 'nmt[hub]'). The examples
    export the demo Transformer: nmt train --config configs/demo_transformer.yaml.

    \b
    Examples:
      nmt export --format ctranslate2 --checkpoint runs/demo_transformer/best.pt \\
        --output exported/demo_transformer
      nmt translate --engine ctranslate2 --model exported/demo_transformer --input test.en
      nmt export --format transformers --checkpoint runs/demo_transformer/best.pt \\
        --output exported/demo_transformer_hf
    """

    def action() -> None:
        if format_ == "transformers":
            if shortlist:
                raise UserError(
                    "--shortlist is CTranslate2's vocabulary map; drop it for transformers."
                )
            from nmt.export.huggingface import export_transformers

            directory = export_transformers(checkpoint, output)
            typer.echo(
                f"exported {checkpoint} to {directory} (transformers); load it with "
                f"AutoModelForSeq2SeqLM.from_pretrained('{directory}')"
            )
            return
        from nmt.export.converter import export_ctranslate2

        directory = export_ctranslate2(checkpoint, output, shortlist)
        typer.echo(
            f"exported {checkpoint} to {directory} ({format_}); translate with: nmt translate "
            f"--engine ctranslate2 --model {directory}"
        )

    guarded(action)


def import_(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="DIR|HUB_ID",
            help="A Marian model of transformers (an OPUS-MT model): its directory, or its hub "
            "id, downloaded where the network reaches the hub.",
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="The checkpoint to write; a config to fine-tune it goes beside it (.yaml).",
        ),
    ],
    src_lang: Annotated[
        str | None,
        typer.Option(metavar="LANG", help="The source language (default: the tokenizer's)."),
    ] = None,
    tgt_lang: Annotated[
        str | None,
        typer.Option(metavar="LANG", help="The target language (default: the tokenizer's)."),
    ] = None,
) -> None:
    """Import a Marian model (OPUS-MT) from transformers as an nmt checkpoint, which
    translate, eval, score, serve, export and train.init_from take like any other
    (pip install 'nmt[hub]'). --from takes a hub id (Helsinki-NLP/opus-mt-en-de), downloaded
    where the network reaches the hub, or a model directory, such as `hf download
    Helsinki-NLP/opus-mt-en-de --local-dir opus-mt-en-de` writes.

    \b
    Examples:
      nmt import --from opus-mt-en-de --output models/opus-mt-en-de.pt
      nmt translate --checkpoint models/opus-mt-en-de.pt --input test.en --beam 4
      nmt train --config models/opus-mt-en-de.yaml
    """

    def action() -> None:
        from nmt.export.marian import import_marian

        checkpoint = import_marian(source, output, src_lang, tgt_lang)
        typer.echo(
            f"imported {source} to {checkpoint}; fine-tune it with: nmt train --config "
            f"{checkpoint.with_suffix('.yaml')} (set its data.path first)"
        )

    guarded(action)
