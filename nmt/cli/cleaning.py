"""The command that cleans a corpus: `nmt clean`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from nmt.cli.common import SetOption, guarded
from nmt.cli.options import CHECKPOINT_HELP
from nmt.errors import UserError

# The options of nmt clean, named (the ones commands share are in options.py).
OutOption = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR",
        help="The cleaned corpus directory to write (new or empty; with --overwrite, an "
        "earlier clean's).",
    ),
]
DataOption = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR",
        help="The corpus directory to clean (default: the config's corpus: data.path, "
        "the demo or a hub dataset).",
    ),
]
OptionalConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        metavar="FILE",
        help="An experiment YAML file: its data section (languages, splits, hub dataset) "
        "and clean section (the filters' thresholds).",
    ),
]
SrcLangOption = Annotated[
    str | None, typer.Option(metavar="LANG", help="The source language (data.src_lang).")
]
TgtLangOption = Annotated[
    str | None, typer.Option(metavar="LANG", help="The target language (data.tgt_lang).")
]
OverwriteOption = Annotated[
    bool, typer.Option("--overwrite", help="Replace the cleaned corpus in --out.")
]
ScoreWithOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help=f"{CHECKPOINT_HELP}, translating source to target: with "
        "--score-with-backward, also filter by dual conditional cross-entropy.",
    ),
]
ScoreBackwardOption = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="The checkpoint translating target to source."),
]
KeepBestOption = Annotated[
    float | None,
    typer.Option(metavar="F", help="Keep the best F (0 to 1) of the pairs by dual cross-entropy."),
]
MaxScoreOption = Annotated[
    float | None,
    typer.Option(metavar="S", help="Keep the pairs of dual cross-entropy at most S."),
]


def clean(
    out: OutOption = None,
    data: DataOption = None,
    config: OptionalConfigOption = None,
    set_: SetOption = None,
    src_lang: SrcLangOption = None,
    tgt_lang: TgtLangOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1, metavar="N", help="Processes judging the pairs (default: one per core)."
        ),
    ] = None,
    overwrite: OverwriteOption = False,
    score_with: ScoreWithOption = None,
    score_with_backward: ScoreBackwardOption = None,
    keep_best: KeepBestOption = None,
    max_score: MaxScoreOption = None,
) -> None:
    """Clean a parallel corpus: write its train split without the pairs the filters of the
    config's `clean` section remove (empty, control characters, too long, a length ratio
    far from the corpus's own, copies, mostly digits or punctuation, sentences of valid or
    test, the wrong language, duplicates), each removed pair's reason in removed.tsv, a
    report.json, and valid and test as they were: a corpus nmt train reads.

    \b
    Examples:
      nmt clean --config configs/demo.yaml --out cleaned/demo
      nmt clean --config configs/demo.yaml --out cleaned/demo --overwrite \\
        --set clean.max_ratio_deviation=3
      nmt train --config configs/demo.yaml --set data.path=cleaned/demo --run-dir runs/demo_cleaned
    """

    def action() -> None:
        from nmt.config import load_config, resolve_config
        from nmt.corpus.clean import clean_corpus
        from nmt.corpus.dual_scores import DualScoring

        if out is None:
            raise UserError("nmt clean needs --out DIR, the cleaned corpus directory to write.")
        overrides = list(set_ or [])
        for key, value in (("path", data), ("src_lang", src_lang), ("tgt_lang", tgt_lang)):
            if value is not None:  # quoted: --src-lang no is Norwegian, not YAML's false
                overrides.append(f"data.{key}={json.dumps(str(value), ensure_ascii=False)}")
        if config is not None:
            experiment = load_config(config, overrides)
        else:
            experiment = resolve_config({"name": "clean"}, overrides, "nmt clean")
        scoring = None
        if score_with is not None or score_with_backward is not None:
            if score_with is None or score_with_backward is None:
                raise UserError(
                    "dual cross-entropy needs both models: --score-with FILE (source to "
                    "target) and --score-with-backward FILE (target to source)."
                )
            scoring = DualScoring(score_with, score_with_backward, keep_best, max_score, workers)
        elif keep_best is not None or max_score is not None:
            raise UserError(
                "--keep-best and --max-score choose by the models' scores: give --score-with "
                "and --score-with-backward too."
            )
        done = clean_corpus(experiment.data, experiment.clean, out, workers, overwrite, scoring)
        report = done.report
        removed = ", ".join(f"{name} {n}" for name, n in report["removed"].items() if n)
        repaired = ", ".join(f"{name} {n}" for name, n in report["repaired"].items() if n)
        typer.echo(
            f"wrote {out}: {report['pairs_out']:,} of {report['pairs_in']:,} pairs kept "
            f"(repaired: {repaired or 'none'}; removed: {removed or 'none'}), "
            f"{report['pairs_per_second']:,} pairs/s; the "
            f"reasons in {out / 'removed.tsv'}, the counts in {out / 'report.json'}"
        )

    guarded(action)
