"""`nmt eval`: a checkpoint's BLEU, chrF and TER on a split or a test set, a grid of
--beam and --alpha, or translations made elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from nmt.cli.common import checkpoint_inputs, guarded
from nmt.cli.decoding_options import (
    COMPUTING,
    GRID,
    PIVOTING,
    RESTRICTING,
    SEARCH,
    AmendOption,
    EnsembleOption,
    HypOption,
    KeptOutputOption,
    SplitOption,
)
from nmt.cli.options import (
    AdapterOption,
    JsonOption,
    MemoryOption,
    SrcOption,
    TgtLangOption,
    TgtOption,
    WorkersOption,
    checkpoints_option,
    decoding,
)
from nmt.errors import UserError
from nmt.outputs import check_output


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

        given = {"--workers": workers, "--tgt-lang": tgt_lang, "--adapter": adapter, "--tm": tm}
        _check_eval_options(checkpoint, split, src, hyp, ref, set_, decode, ensemble, given)
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
    translating: dict[str, object | None],
) -> None:
    """Refuses option combinations of nmt eval that are incomplete, or that it would ignore;
    `translating`: the options that only translating reads, by name (None: not given)."""
    if hyp:
        if checkpoint or src is not None:
            raise UserError(
                "--hyp scores translations made elsewhere; --checkpoint (with --split or "
                "--src) makes its own. Give one or the other."
            )
        unused = [f"--{key.replace('_', '-')}" for key in decode]
        if ensemble:
            unused.append("--ensemble")
        if split is not None:
            unused.append("--split")
        if overrides:
            unused.append("--set")
        unused += [name for name, value in translating.items() if value is not None]
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
