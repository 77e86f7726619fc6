"""The commands that decode: `nmt translate`, `nmt eval`, `nmt score`."""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, BinaryIO, TextIO

import typer

from nmt.cli.common import checkpoint_inputs, guarded, output_stream
from nmt.cli.decoding_options import (
    AlignmentsOption,
    AmendOption,
    AttentionLayerOption,
    AttentionPlotsOption,
    ConstraintsOption,
    EngineOption,
    EnsembleOption,
    FormatOption,
    HypOption,
    InputOption,
    KeepOption,
    KeptOutputOption,
    MarkupOption,
    ModelDirOption,
    PlacementOption,
    PrefixOption,
    SplitOption,
    TranslationsOutputOption,
)
from nmt.cli.options import (
    AdapterOption,
    JsonOption,
    MemoryOption,
    QuantizeOption,
    SrcLangOption,
    SrcOption,
    TgtLangOption,
    TgtOption,
    ThenOption,
    WorkersOption,
    checkpoints_option,
    decoding,
)
from nmt.errors import UserError
from nmt.outputs import check_output
from nmt.reads import record

SEARCH = ("batch_size", "beam", "alpha", "max_src_len", "max_len_extra", "no_repeat_ngram")
COMPUTING = ("precision",)  # what the model computes in
PIVOTING = ("through", "zero_shot", "pivot_candidates")  # a pivot language between the two
SAMPLING = ("nbest", "sample", "temperature", "top_k", "top_p", "seed")
RESTRICTING = ("shortlist", "restrict_to_target_language")  # which output pieces search scores
GRID = ("beam", "alpha")  # what `nmt eval` scores a grid of, each option given several times


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


@decoding(
    *SEARCH,
    *COMPUTING,
    *PIVOTING,
    *RESTRICTING,
    "coverage_penalty",
    "max_constraints",
    repeatable=GRID,
)
def evaluate(
    checkpoint: checkpoints_option(
        "compare systems (paired bootstrap p-values against the first)"
    ) = None,
    adapter: AdapterOption = None,
    tm: MemoryOption = None,
    split: SplitOption = None,
    src: SrcOption = None,
    hyp: HypOption = None,
    ref: TgtOption = None,
    workers: WorkersOption = None,
    set_: AmendOption = None,
    ensemble: EnsembleOption = False,
    as_json: JsonOption = False,
    tgt_lang: TgtLangOption = None,
    output: KeptOutputOption = None,
    decode: dict | None = None,
) -> None:
    """Score translations with sacrebleu (BLEU, chrF, TER and their signatures).

    A checkpoint translates a split of its corpus (--split, default test) or a test set of
    your own (--src and --ref); unset decoding options come from its decode section. --hyp
    scores translations made elsewhere (an ensemble's, say: nmt translate with --checkpoint
    repeated). --beam and --alpha given several times score every combination, a row
    each, and name the best by BLEU: choose them on --split valid, then score test once.

    \b
    Examples:
      nmt eval --checkpoint runs/demo --split test --beam 1
      nmt eval --checkpoint runs/demo --split valid --beam 1 --beam 5 --alpha 0.6 --alpha 1.0
      nmt eval --checkpoint runs/demo/best.pt --src test.en --ref test.de
      nmt eval --checkpoint runs/demo --split test --output runs/demo/test.best.hyp
      nmt eval --checkpoint runs/demo/best.pt --checkpoint runs/demo_transformer/best.pt
      nmt eval --checkpoint runs/demo/best.pt --checkpoint runs/demo_transformer/best.pt --ensemble
      nmt eval --hyp runs/demo/test.hyp --ref test.de --json
      nmt eval --hyp runs/demo/test.hyp --hyp runs/demo_transformer/test.hyp --ref test.de
    """

    def action() -> None:
        from nmt.translate.evaluation import evaluate_run, score_files
        from nmt.translate.grid import evaluate_grid

        _check_eval_options(
            checkpoint, split, src, hyp, ref, set_, decode, ensemble, workers, tgt_lang
        )
        grid = {name: decode.pop(name) for name in GRID if name in decode}
        if all(len(values) == 1 for values in grid.values()):
            decode.update({name: values[0] for name, values in grid.items()})
            grid = {}
        if output is not None and hyp:
            raise UserError(
                f"--output {output} keeps the translations nmt eval makes, and --hyp files are "
                "made elsewhere: drop --output (the --hyp files are the translations)."
            )
        if output is not None and grid:
            raise UserError(
                f"--output {output} keeps the translations of one setting, and a grid of --beam "
                "and --alpha makes several: drop --output, or score one --beam and --alpha."
            )
        if output is not None:
            given = [("--src", src), ("--ref", ref), *checkpoint_inputs(checkpoint)]
            given += [*checkpoint_inputs(adapter, "--adapter"), ("--tm", tm)]
            check_output(output, "--output", given)
        # these reach Translator.load with the decode options
        decode.update({k: v for k, v in (("adapter", adapter), ("memory", tm)) if v is not None})
        run = dict(split=split or "test", src=src, ref=ref, ensemble=ensemble)
        run.update(overrides=set_ or [], workers=workers, tgt_lang=tgt_lang)
        if hyp:
            report = score_files(hyp, ref)
        elif grid:
            report = evaluate_grid(checkpoint, grid, **run, **decode)
        else:
            report = evaluate_run(checkpoint, **run, output=output, **decode)
        typer.echo(json.dumps(report.as_dict()) if as_json else report.summary())

    guarded(action)


def _check_eval_options(
    checkpoint: list[Path] | None,
    split: str | None,
    src: Path | None,
    hyp: list[Path] | None,
    ref: Path | None,
    overrides: list[str] | None,
    decode: dict,
    ensemble: bool,
    workers: int | None = None,
    tgt_lang: str | None = None,
) -> None:
    """Refuses option combinations of nmt eval that are incomplete, or that it would ignore."""
    if hyp:
        if checkpoint or src is not None:
            raise UserError(
                "--hyp scores translations made elsewhere; --checkpoint (with --split or "
                "--src) makes its own. Give one or the other."
            )
        unused = [f"--{key.replace('_', '-')}" for key in decode]
        if ensemble:
            unused.append("--ensemble")
        if workers is not None:
            unused.append("--workers")
        if split is not None:
            unused.append("--split")
        if overrides:
            unused.append("--set")
        if tgt_lang is not None:
            unused.append("--tgt-lang")
        if unused:
            raise UserError(
                "--hyp scores translations made elsewhere, so nothing is decoded and no corpus "
                f"is read: drop {' and '.join(unused)}, or score a --checkpoint instead."
            )
        if ref is None:
            raise UserError("--hyp needs --ref, the reference translations to score it against.")
        return
    if not checkpoint:
        raise UserError(
            "nmt eval needs --checkpoint (with --split, or --src and --ref), or --hyp and --ref."
        )
    if src is None:
        if ref is not None:
            raise UserError(
                "--ref needs --src (a source file for --checkpoint to translate) "
                "or --hyp (translations to score)."
            )
        return
    if ref is None:
        raise UserError(f"--src {src} needs --ref, the reference translations of its lines.")
    if split is not None:
        raise UserError(
            "--src and --ref give the test set, so --split (a split of the checkpoint's corpus) "
            "does not apply. Give one or the other."
        )
    if overrides:
        raise UserError(
            "--src and --ref give the test set, so --set (which amends the checkpoint's config "
            "to find --split) does not apply. Drop it."
        )


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
