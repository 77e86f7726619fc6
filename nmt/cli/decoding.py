"""The commands that decode: `nmt translate`, `nmt eval`, `nmt score`, `nmt serve`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from nmt.cli.common import (
    AlphaOption,
    BatchSizeOption,
    BeamOption,
    CoveragePenaltyOption,
    MaxSrcLenOption,
    NoRepeatNgramOption,
    QuantizeOption,
    TgtLangOption,
    WorkersOption,
    check_output_dir,
    given,
    guarded,
    output_stream,
)
from nmt.errors import UserError


def translate(
    checkpoint: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="FILE",
            help="A .pt file written by nmt train; repeat it to translate with an ensemble.",
        ),
    ] = None,
    engine: Annotated[
        Literal["torch", "ctranslate2"],
        typer.Option(
            metavar="torch|ctranslate2",
            help="torch: a --checkpoint; ctranslate2: a --model DIR written by nmt export.",
        ),
    ] = "torch",
    model: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="A model directory written by nmt export --format ctranslate2 "
            "(with --engine ctranslate2).",
        ),
    ] = None,
    quantize: QuantizeOption = None,
    input: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            metavar="FILE",
            help="Source text, one sentence a line, translated in batches "
            "(default: stdin, translated line by line as it arrives).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Where translations go (default: stdout)."
        ),
    ] = None,
    batch_size: BatchSizeOption = None,
    beam: BeamOption = None,
    alpha: AlphaOption = None,
    max_src_len: MaxSrcLenOption = None,
    no_repeat_ngram: NoRepeatNgramOption = None,
    coverage_penalty: CoveragePenaltyOption = None,
    workers: WorkersOption = None,
    nbest: Annotated[
        int | None,
        typer.Option(
            metavar="N", help="Write N lines per input: 'INDEX ||| translation ||| score'."
        ),
    ] = None,
    sample: Annotated[
        bool | None,
        typer.Option("--sample/--no-sample", help="Draw translations at random (nbest: draws)."),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(metavar="T", help="Sampling temperature.")
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option(metavar="K", help="Sample from the K most likely tokens (0: all)."),
    ] = None,
    top_p: Annotated[
        float | None,
        typer.Option(
            metavar="P", help="Sample from the most likely tokens holding this probability mass."
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(metavar="S", help="Seed of the sampling.")] = None,
    alignments: Annotated[
        bool, typer.Option(help="Append ' ||| ' and word alignments 'i-j' (source-target).")
    ] = False,
    attention_plots: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Write an attention heatmap per input line here, DIR/INDEX.png."
        ),
    ] = None,
    attention_layer: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="A Transformer's layer (1 to its layers) whose attention over the source "
            "--alignments and --attention-plots show (default: the last).",
        ),
    ] = None,
    constraints: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help='One JSON object per input line, {"include": [phrases], "exclude": '
            "[phrases]}: phrases each translation must hold, and must not (a blank line: "
            "none). Included phrases take beam search.",
        ),
    ] = None,
    prefix: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="One line per input line: the text its translation starts with (a blank "
            "line: none); the search continues from it.",
        ),
    ] = None,
    tgt_lang: TgtLangOption = None,
) -> None:
    """Translate text with a checkpoint: one output line per input line, in input order.

    Unset options come from the checkpoint's decode section. --engine ctranslate2 translates
    with a model exported by nmt export instead, taking its defaults from the same section.

    \b
    Examples:
      echo "the small dog sees a bird." | nmt translate --checkpoint runs/demo/best.pt
      nmt translate --checkpoint runs/demo/best.pt --input test.en --output test.hyp
      nmt translate --checkpoint runs/demo/best.pt --beam 1 --alignments --input test.en
      nmt translate --checkpoint runs/demo/best.pt --quantize int8 --input test.en
      nmt translate --engine ctranslate2 --model exported/demo_transformer --input test.en
      nmt translate --checkpoint runs/demo/best.pt --input test.en --constraints terms.jsonl
    """

    def action() -> None:
        from nmt.data.splits import read_lines
        from nmt.translate.constraints import read_constraints
        from nmt.translate.lines import line_batches, write_translations

        _check_engine_options(
            engine, checkpoint, model, sample, alignments, attention_plots, attention_layer
        )
        check_output_dir(output)
        batches = [read_lines(input)] if input else None
        terms = read_constraints(constraints) if constraints else None
        if prefix is not None:
            prefixes = [line.strip() or None for line in read_lines(prefix)]
        else:
            prefixes = None
        settings = given(
            batch_size=batch_size,
            beam=beam,
            alpha=alpha,
            nbest=nbest,
            sample=sample,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            max_src_len=max_src_len,
            no_repeat_ngram=no_repeat_ngram,
            coverage_penalty=coverage_penalty,
        )
        if engine == "ctranslate2":
            from nmt.export.engine import load_ctranslate2_translator

            translator = load_ctranslate2_translator(model, quantize, workers, tgt_lang, **settings)
        else:
            from nmt.translate.translator import Translator

            translator = Translator.load(
                checkpoint,
                attention_layer=attention_layer,
                quantize=quantize,
                workers=workers,
                tgt_lang=tgt_lang,
                **settings,
            )
        with output_stream(output) as sink:
            write_translations(
                translator,
                batches or line_batches(sys.stdin.buffer),
                sink,
                alignments=alignments,
                plot_dir=attention_plots,
                constraints=terms,
                prefixes=prefixes,
            )

    guarded(action)


def _check_engine_options(
    engine: str,
    checkpoint: list[Path] | None,
    model: Path | None,
    sample: bool | None,
    alignments: bool,
    attention_plots: Path | None,
    attention_layer: int | None,
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
        "--sample": bool(sample),
        "--alignments": alignments,
        "--attention-plots": attention_plots is not None,
        "--attention-layer": attention_layer is not None,
    }
    refused = [option for option, given in unsupported.items() if given]
    if refused:
        raise UserError(
            f"--engine ctranslate2 runs greedy and beam search without attention, so "
            f"{' and '.join(refused)} need the --checkpoint the model was exported from."
        )


def evaluate(
    checkpoint: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="FILE",
            help="Translate the test set with this checkpoint and score it; repeat to compare "
            "systems (paired bootstrap p-values against the first).",
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(
            metavar="SPLIT",
            help="Which split of the checkpoint's corpus to score: train, valid or test "
            "(default: test).",
        ),
    ] = None,
    src: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Source side of a test set of your own, instead of --split."
        ),
    ] = None,
    hyp: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="FILE",
            help="Translations made elsewhere, to score; repeat to compare systems (paired "
            "bootstrap p-values against the first).",
        ),
    ] = None,
    ref: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Reference translations of --src's or --hyp's lines."),
    ] = None,
    batch_size: BatchSizeOption = None,
    beam: BeamOption = None,
    alpha: AlphaOption = None,
    max_src_len: MaxSrcLenOption = None,
    no_repeat_ngram: NoRepeatNgramOption = None,
    coverage_penalty: CoveragePenaltyOption = None,
    workers: WorkersOption = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Amend the checkpoint's config to find --split, e.g. --set data.path=DIR "
            "(repeatable).",
        ),
    ] = None,
    ensemble: Annotated[
        bool,
        typer.Option(
            "--ensemble",
            help="Translate with all the --checkpoint models as one ensemble instead of "
            "comparing them.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    tgt_lang: TgtLangOption = None,
) -> None:
    """Score translations with sacrebleu (BLEU, chrF, TER and their signatures).

    A checkpoint translates a split of its corpus (--split, default test) or a test set of
    your own (--src and --ref); unset decoding options come from its decode section. --hyp
    scores translations made elsewhere (an ensemble's, say: nmt translate with --checkpoint
    repeated).

    \b
    Examples:
      nmt eval --checkpoint runs/demo/best.pt --split test --beam 1
      nmt eval --checkpoint runs/demo/best.pt --src test.en --ref test.de
      nmt eval --checkpoint runs/demo/best.pt --checkpoint runs/demo_transformer/best.pt
      nmt eval --checkpoint runs/demo/best.pt --checkpoint runs/demo_transformer/best.pt --ensemble
      nmt eval --hyp runs/demo/test.hyp --ref test.de --json
      nmt eval --hyp runs/demo/test.hyp --hyp runs/demo_transformer/test.hyp --ref test.de
    """

    def action() -> None:
        from nmt.translate.evaluation import evaluate_run, score_files

        decode = given(
            batch_size=batch_size,
            beam=beam,
            alpha=alpha,
            max_src_len=max_src_len,
            no_repeat_ngram=no_repeat_ngram,
            coverage_penalty=coverage_penalty,
        )
        _check_eval_options(
            checkpoint, split, src, hyp, ref, set_, decode, ensemble, workers, tgt_lang
        )
        if hyp:
            report = score_files(hyp, ref)
        else:
            report = evaluate_run(
                checkpoint,
                split or "test",
                src,
                ref,
                ensemble,
                set_ or [],
                workers,
                tgt_lang,
                **decode,
            )
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


def score(
    checkpoint: Annotated[
        list[Path],
        typer.Option(
            metavar="FILE",
            help="A .pt file written by nmt train; repeat it to score with an ensemble.",
        ),
    ],
    src: Annotated[Path, typer.Option(metavar="FILE", help="Source sentences, one a line.")],
    tgt: Annotated[
        Path, typer.Option(metavar="FILE", help="Their translations to score, one a line.")
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Where scores go (default: stdout)."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="One JSON object a line, with every token's log-probability."),
    ] = False,
    batch_size: BatchSizeOption = None,
    max_src_len: MaxSrcLenOption = None,
    workers: WorkersOption = None,
    tgt_lang: TgtLangOption = None,
) -> None:
    """Score given translations: the model's log-probability of each target line given its
    source line, for filtering a corpus or reranking.

    One line per pair: the total log-probability (eos included) and the mean per token, tab
    separated; with --json an object with total, mean, tokens and log_probs (and a copy
    model's p_gen, each token's probability of being generated, not copied). A blank source
    line gives a blank line (null with --json). Repeated --checkpoint scores with the
    ensemble, as nmt translate combines it.

    \b
    Examples:
      nmt score --checkpoint runs/demo/best.pt --src test.en --tgt test.de
      nmt score --checkpoint runs/demo/best.pt --src test.en --tgt runs/demo/test.hyp --json
    """

    def action() -> None:
        from nmt.data.splits import read_lines
        from nmt.translate.translator import Translator

        check_output_dir(output)
        sources, targets = read_lines(src), read_lines(tgt)
        if len(sources) != len(targets):
            raise UserError(
                f"--src {src} has {len(sources)} lines but --tgt {tgt} has {len(targets)}; "
                "they must align line by line."
            )
        settings = given(max_src_len=max_src_len)
        translator = Translator.load(checkpoint, workers=workers, tgt_lang=tgt_lang, **settings)
        scores = translator.score(sources, targets, batch_size)
        with output_stream(output) as sink:
            for pair in scores:
                if as_json:
                    fields = {"total": pair.total, "mean": pair.mean, "tokens": pair.tokens}
                    fields["log_probs"] = pair.log_probs
                    if pair.p_gen is not None:
                        fields["p_gen"] = pair.p_gen
                    line = json.dumps(fields, ensure_ascii=False)
                else:
                    line = "" if pair.total is None else f"{pair.total:.4f}\t{pair.mean:.4f}"
                sink.write(line + "\n")

    guarded(action)


def serve(
    checkpoint: Annotated[
        list[str],
        typer.Option(
            metavar="[ID=]FILE",
            help="A .pt file written by nmt train, served under its run name or ID; "
            "repeat to serve several models.",
        ),
    ],
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Address to listen on (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, metavar="N", help="Port.")] = 5000,
    api_key: Annotated[
        str | None,
        typer.Option(
            metavar="KEY",
            envvar="NMT_API_KEY",
            help="Require 'Authorization: Bearer KEY' on every API route but health "
            "(or set NMT_API_KEY, which ps does not show).",
        ),
    ] = None,
    max_sentences: Annotated[
        int, typer.Option(min=1, metavar="N", help="Most sentences one request may hold.")
    ] = 64,
    max_body_kib: Annotated[
        int, typer.Option(min=1, metavar="N", help="Largest request body, in KiB.")
    ] = 1024,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Batches decoded side by side, each on one torch thread (default: one per core).",
        ),
    ] = None,
    max_src_len: MaxSrcLenOption = None,
    no_repeat_ngram: NoRepeatNgramOption = None,
    coverage_penalty: CoveragePenaltyOption = None,
    quantize: QuantizeOption = None,
) -> None:
    """Serve models over HTTP: OpenNMT-py's API at /translator, a web page at /.

    Decoding options default to each checkpoint's decode section; requests may set beam and
    n_best. SIGTERM finishes the requests in flight, then exits 0.

    \b
    Examples:
      nmt serve --checkpoint runs/demo/best.pt
      nmt serve --checkpoint rnn=runs/demo/best.pt --checkpoint runs/demo_transformer/best.pt
      nmt serve --checkpoint runs/demo/best.pt --quantize int8
      curl -d '[{"src": "the small dog sees a bird.", "id": "demo"}]' \\
        localhost:5000/translator/translate
    """

    def action() -> None:
        from nmt.extras import require_extra

        require_extra("serve", "nmt serve")
        from nmt.serve.server import Limits, serve

        limits = Limits(max_sentences=max_sentences, max_body_bytes=max_body_kib * 1024)
        given = dict(
            max_src_len=max_src_len,
            no_repeat_ngram=no_repeat_ngram,
            coverage_penalty=coverage_penalty,
        )
        decode = {key: value for key, value in given.items() if value is not None}
        serve(checkpoint, host, port, api_key, limits, workers, quantize, decode)

    guarded(action)
