"""`nmt translate`: lines, marked-up lines and whole documents, with our engine or
CTranslate2's."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any, BinaryIO

from nmt.cli.common import checkpoint_inputs, guarded, output_stream
from nmt.cli.decoding_options import (
    COMPUTING,
    PIVOTING,
    RESTRICTING,
    SAMPLING,
    SEARCH,
    AlignmentsOption,
    AttentionLayerOption,
    AttentionPlotsOption,
    ConstraintsOption,
    EngineOption,
    FormatOption,
    InputOption,
    KeepOption,
    MarkupOption,
    ModelDirOption,
    PlacementOption,
    PrefixOption,
    TranslationsOutputOption,
)
from nmt.cli.options import (
    AdapterOption,
    MemoryOption,
    QuantizeOption,
    SrcLangOption,
    TgtLangOption,
    ThenOption,
    WorkersOption,
    checkpoints_option,
    decoding,
)
from nmt.errors import UserError
from nmt.outputs import check_output
from nmt.reads import record


@decoding(
    *SEARCH, *COMPUTING, *PIVOTING, *RESTRICTING, "coverage_penalty", "max_constraints", *SAMPLING
)
def translate(
    checkpoint: checkpoints_option("translate with an ensemble") = None,
    adapter: AdapterOption = None,
    tm: MemoryOption = None,
    engine: EngineOption = "torch",
    model: ModelDirOption = None,
    quantize: QuantizeOption = None,
    input: InputOption = None,
    output: TranslationsOutputOption = None,
    workers: WorkersOption = None,
    alignments: AlignmentsOption = False,
    attention_plots: AttentionPlotsOption = None,
    attention_layer: AttentionLayerOption = None,
    constraints: ConstraintsOption = None,
    prefix: PrefixOption = None,
    tgt_lang: TgtLangOption = None,
    src_lang: SrcLangOption = None,
    then: ThenOption = None,
    markup: MarkupOption = None,
    keep: KeepOption = None,
    format: FormatOption = None,
    markup_placement: PlacementOption = None,
    decode: dict | None = None,
) -> None:
    """Translate text with a checkpoint: one output line per input line, in input order.

    Unset options come from the checkpoint's decode section. --engine ctranslate2 translates
    with a model exported by nmt export instead, taking its defaults from the same section.

    \b
    Examples:
      echo "the small dog sees a bird." | nmt translate --checkpoint runs/demo
      nmt translate --checkpoint runs/demo/best.pt --input test.en --output test.hyp
      nmt translate --checkpoint runs/demo/best.pt --beam 1 --alignments --input test.en
      nmt translate --checkpoint runs/demo/best.pt --quantize int8 --input test.en
      nmt translate --checkpoint runs/demo --adapter runs/demo_legal --input test.en
      nmt translate --checkpoint runs/demo --tm tm.npz --input test.en
      nmt translate --engine ctranslate2 --model exported/demo_transformer --input test.en
      nmt translate --checkpoint runs/demo/best.pt --input test.en --constraints terms.jsonl
      nmt translate --checkpoint runs/demo/best.pt --markup html --input lines.html
      nmt translate --checkpoint runs/demo/best.pt --input film.srt --output film.de.srt
    """

    def action() -> None:
        from nmt.cli.documents import document_of, translate_file
        from nmt.translate.lines import write_translations

        document = document_of(input, format, markup)
        marked = f"--markup {markup}" if markup else document and f"a {document.name} file"
        _check_engine_options(
            engine, checkpoint, model, decode, alignments, attention_plots, attention_layer, then,
            marked,
        )  # fmt: skip
        _check_markup(marked, keep, markup_placement, decode, alignments, attention_plots,
                      constraints, prefix)  # fmt: skip
        _check_output_first(output, input, constraints, prefix, checkpoint, then, adapter, tm)
        with contextlib.ExitStack() as files:
            source, terms, starts = _line_inputs(files, document, input, constraints, prefix)
            translator = _translator(engine, checkpoint, model, quantize, workers, tgt_lang,
                                     attention_layer, then, adapter, tm, decode)  # fmt: skip
            if output is not None:  # and every file opened since: a shortlist, a model's files
                check_output(output, "--output")
            if document is not None:
                translate_file(
                    document, input, output, translator, keep, src_lang, tgt_lang,
                    markup_placement,
                )  # fmt: skip
                return
            with output_stream(output) as sink:
                write_translations(
                    translator,
                    source,
                    sink,
                    alignments=alignments,
                    plot_dir=attention_plots,
                    constraints=terms,
                    prefixes=starts,
                    src_lang=src_lang,
                    markup=markup,
                    keep=keep or (),
                    placement=markup_placement,
                )

    guarded(action)


def _check_output_first(output, input, constraints, prefix, checkpoint, then, adapter, tm) -> None:
    """--output against the files the options name, before the slow work."""
    if output is not None:
        given = [("--input", input), ("--constraints", constraints), ("--prefix", prefix)]
        inputs = [
            *given,
            *checkpoint_inputs(checkpoint),
            *checkpoint_inputs(then, "--then"),
            *checkpoint_inputs(adapter, "--adapter"),
            ("--tm", tm),
        ]
        check_output(output, "--output", inputs, stdin=input is None)


def _line_inputs(files, document, input, constraints, prefix) -> tuple:
    """The input's lines (none for a file translated whole), and those of --constraints and
    --prefix, opened into `files`."""
    from nmt.translate.constraints import constraints_line, prefix_line
    from nmt.translate.lines import FileLines, InputLines

    if input and document is None:
        source = InputLines(files.enter_context(_opened(input)), str(input))
    else:
        source = InputLines(sys.stdin.buffer)
    terms = starts = None
    if constraints:
        parse = constraints_line(constraints)
        terms = files.enter_context(FileLines("--constraints", constraints, parse))
    if prefix:
        starts = files.enter_context(FileLines("--prefix", prefix, prefix_line))
    return source, terms, starts


def _opened(path: Path) -> BinaryIO:
    """A file to read as binary; a UserError if it cannot be."""
    try:
        return record(path, "--input").open("rb")
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}.") from None


def _translator(
    engine: str,
    checkpoint: list[Path] | None,
    model: Path | None,
    quantize: str | None,
    workers: int | None,
    tgt_lang: str | None,
    attention_layer: int | None,
    then: Path | None,
    adapter: Path | None,
    tm: Path | None,
    decode: dict,
) -> Any:
    """Our Translator of the checkpoints (chained to `then`, adapted by `adapter`, with the
    translation memory `tm`), or CTranslate2's of an exported model."""
    if engine == "ctranslate2":
        if adapter is not None:
            raise UserError(
                f"--adapter {adapter} goes on a --checkpoint; for --engine ctranslate2, merge "
                "it (nmt adapter merge) and export the merged checkpoint."
            )
        if tm is not None:
            raise UserError(
                f"--tm {tm} goes with a --checkpoint (--engine torch): CTranslate2 translates "
                "without a memory."
            )
        from nmt.export.engine import load_ctranslate2_translator

        return load_ctranslate2_translator(model, quantize, workers, tgt_lang, **decode)
    from nmt.translate.translator import Translator

    return Translator.load(
        checkpoint,
        attention_layer=attention_layer,
        quantize=quantize,
        workers=workers,
        tgt_lang=tgt_lang,
        then=then,
        adapter=adapter,
        memory=tm,
        **decode,
    )


def _check_engine_options(
    engine: str,
    checkpoint: list[Path] | None,
    model: Path | None,
    decode: dict,
    alignments: bool,
    attention_plots: Path | None,
    attention_layer: int | None,
    then: Path | None = None,
    markup: str | None = None,
) -> None:
    """Refuses what the chosen engine cannot do: each reads its own kind of model."""
    if engine == "torch":
        if model is not None:
            raise UserError(
                f"--model {model} is a model exported for CTranslate2; add --engine "
                "ctranslate2, or translate a --checkpoint."
            )
        if not checkpoint:
            raise UserError(
                "nmt translate needs --checkpoint FILE (or --engine ctranslate2 --model DIR)."
            )
        return
    if checkpoint:
        raise UserError(
            "--engine ctranslate2 translates a --model DIR, not a --checkpoint; export the "
            "checkpoint first: nmt export --format ctranslate2 --checkpoint FILE --output DIR."
        )
    if model is None:
        raise UserError("--engine ctranslate2 needs --model DIR, written by nmt export.")
    unsupported = {
        "--sample": bool(decode.get("sample")),
        "--alignments": alignments,
        "--attention-plots": attention_plots is not None,
        "--attention-layer": attention_layer is not None,
        "--then": then is not None,
        str(markup): markup is not None,  # tags follow the attention's word alignments
    }
    refused = [option for option, given in unsupported.items() if given]
    if refused:
        raise UserError(
            f"--engine ctranslate2 runs greedy and beam search without attention, so "
            f"{' and '.join(refused)} need the --checkpoint the model was exported from."
        )


def _check_markup(
    marked: str | None,
    keep: list[str] | None,
    placement: str | None,
    decode: dict,
    alignments: bool,
    attention_plots: Path | None,
    constraints: Path | None,
    prefix: Path | None,
) -> None:
    """Refuses what a marked-up line cannot have: its output is one line with its tags,
    made of several sentences' translations. `marked`: how the input is marked up (--markup,
    or the format of a file translated whole)."""
    if marked is None and placement:
        raise UserError(
            "--markup-placement places the tags of marked-up lines and files: add --markup "
            "html or --markup xml, or translate a file of a format --format names."
        )
    if marked is None:
        if keep:
            raise UserError(
                "--keep holds text out of the sentences of marked-up lines and files: add "
                "--markup html or --markup xml, or translate a file of a format --format "
                "names (or leave --keep out)."
            )
        return
    from nmt.translate.markup import NOT_WITH_MARKUP, marked_conflicts

    asked = dict(alignments=alignments, attention=attention_plots, nbest=decode.get("nbest"))
    conflicts = marked_conflicts(constraints=constraints, prefix=prefix, **asked)
    if named := [NOT_WITH_MARKUP[name] for name in conflicts]:
        raise UserError(
            f"{marked} is written once, with its tags, from the translations of the "
            f"sentences it holds, so {' and '.join(named)} cannot go with it (they name one "
            "sentence's translation); leave them out, or translate lines of plain text."
        )
