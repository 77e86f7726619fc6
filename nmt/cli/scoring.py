"""`nmt score`: the model's log-probability of given translations, a line per pair."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from nmt.cli.common import checkpoint_inputs, guarded, output_stream
from nmt.cli.decoding_options import COMPUTING, PIVOTING
from nmt.cli.options import (
    AdapterOption,
    SrcLangOption,
    SrcOption,
    TgtLangOption,
    TgtOption,
    WorkersOption,
    checkpoints_option,
    decoding,
)
from nmt.errors import UserError
from nmt.outputs import check_output


@decoding("batch_size", "max_src_len", "max_len_extra", *COMPUTING, *PIVOTING)
def score(
    checkpoint: checkpoints_option("score with an ensemble") = None,
    adapter: AdapterOption = None,
    src: SrcOption = None,
    tgt: TgtOption = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Where scores go (default: stdout)."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="One JSON object a line, with every token's log-probability."),
    ] = False,
    workers: WorkersOption = None,
    tgt_lang: TgtLangOption = None,
    src_lang: SrcLangOption = None,
    decode: dict | None = None,
) -> None:
    """Score given translations: the model's log-probability of each target line given its
    source line, for filtering a corpus or reranking; the files are read a chunk at a time.

    One line per pair: the total log-probability and the mean per token, tab separated; with
    --json an object with total, mean, tokens, log_probs, ended and unknown (and a copy
    model's p_gen, each token's probability of being generated, not copied). Tokens are
    scored as search scores its own translations: a copy model's copied words as copied,
    and eos only within the sentence's length limit (search stops there without it; ended
    false). A blank source line gives a blank line (null with --json). Repeated --checkpoint
    scores with the ensemble, as nmt translate combines it.

    \b
    Examples:
      nmt score --checkpoint runs/demo/best.pt --src test.en --tgt test.de
      nmt score --checkpoint runs/demo --src test.en --tgt runs/demo/test.hyp --json
    """

    def action() -> None:
        from nmt.translate.lines import FileLines

        if not checkpoint or src is None or tgt is None:
            raise UserError("nmt score needs --checkpoint FILE, --src FILE and --tgt FILE.")
        if output is not None:
            given = [("--src", src), ("--tgt", tgt), *checkpoint_inputs(checkpoint)]
            given += checkpoint_inputs(adapter, "--adapter")
            check_output(output, "--output", given)
        with FileLines("--src", src, _text) as sources, FileLines("--tgt", tgt, _text) as targets:
            if sources.total != targets.total:
                raise UserError(
                    f"--src {src} has {sources.total} lines but --tgt {tgt} has "
                    f"{targets.total}; they must align line by line."
                )
            from nmt.translate.translator import Translator

            translator = Translator.load(
                checkpoint, workers=workers, tgt_lang=tgt_lang, adapter=adapter, **decode
            )
            with output_stream(output) as sink:
                pairs = zip(sources, targets, strict=True)
                _write_scores(translator, pairs, sources.total, sink, as_json, src_lang)

    guarded(action)


def _text(line: str, number: int) -> str:
    return line


def _write_scores(
    translator: Any, pairs: Iterator, total: int, sink: TextIO, as_json: bool, src_lang: str | None
):
    """Scores the (source, target) pairs a chunk at a time, a line per pair (routed as
    translate routes them, `src_lang` as there), with a progress line on a terminal and a
    warning for targets cut at their limit or holding <unk>."""
    from nmt.terminal import ProgressLine
    from nmt.translate.pipeline import CHUNK_LINES

    progress, cut, unknown = ProgressLine("scoring", total), 0, 0
    try:
        while chunk := list(itertools.islice(pairs, CHUNK_LINES)):
            sources, targets = [s for s, _ in chunk], [t for _, t in chunk]
            for pair in translator.score(sources, targets, src_lang=src_lang):
                sink.write(_score_line(pair, as_json) + "\n")
                cut += pair.total is not None and not pair.ended
                unknown += pair.unknown > 0
            progress.advance(len(chunk))
    finally:
        progress.close()
    _warn_about_scores(cut, unknown)


def _score_line(pair, as_json: bool) -> str:
    if as_json:
        fields = {"total": pair.total, "mean": pair.mean, "tokens": pair.tokens}
        fields.update(log_probs=pair.log_probs, ended=pair.ended, unknown=pair.unknown)
        if pair.p_gen is not None:
            fields["p_gen"] = pair.p_gen
        return json.dumps(fields, ensure_ascii=False)
    return "" if pair.total is None else f"{pair.total:.4f}\t{pair.mean:.4f}"


def _warn_about_scores(cut: int, unknown: int) -> None:
    if cut:
        typer.echo(
            f"warning: {cut} target(s) reach their source's output length limit, where search "
            "stops without eos, so eos was not scored for them; raise --max-len-extra to "
            "score it.",
            err=True,
        )
    if unknown:
        typer.echo(
            f"warning: {unknown} target(s) hold text the model cannot write, scored as <unk> "
            "pieces (--json: unknown).",
            err=True,
        )
