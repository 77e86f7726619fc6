"""The end of a run: the best checkpoint's translations of the test split, scored as `nmt
eval` scores them (decode settings, every core), written beside it and recorded."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from nmt.data.corpus import Corpus
from nmt.scoring import mean_scores
from nmt.train.precision import Precision
from nmt.train.validation import target_language
from nmt.translate.evaluation import evaluate
from nmt.translate.translator import Translator

log = logging.getLogger("nmt")


def test_scores(
    run_dir: Path, corpus: Corpus, precision: Precision, device: torch.device
) -> tuple[dict, dict]:
    """The best checkpoint's scores on the test split (the mean over directions with several)
    and their metrics record: RUN/test.hyp, or RUN/test.de-en.hyp ... with the scores of
    each direction beside the mean (test_bleu_de-en, ...). Nothing without a test split."""
    if not corpus.test:
        return {}, {}
    # in the training precision; without decode.shortlist, whose shortlist `nmt shortlist`
    # learns after training
    computing = "bf16" if precision.name == "bf16" else "fp32"  # fp16: under autocast
    translator = Translator.load(
        run_dir / "best.pt", device, workers=None, shortlist=0, precision=computing
    )
    several = len(corpus.test) > 1
    results = {}
    for name, text in corpus.test.items():
        with precision.autocast():
            result = evaluate(translator, text, target_language(name))
        hyp_file = run_dir / (f"test.{name}.hyp" if several else "test.hyp")
        hyp_file.write_text("".join(h + "\n" for h in result.hypotheses), "utf-8")
        results[name] = result.scores
        log.info(
            "test (%s, best checkpoint, beam %d):\n%s",
            text.origin,
            translator.decode.beam,
            result.scores.summary(),
        )
    scores = mean_scores(list(results.values())).as_dict() if several else result.scores.as_dict()
    record = {f"test_{name}": value for name, value in scores.items()}
    if several:
        for name, direction_scores in results.items():
            record.update(
                {
                    f"test_{metric}_{name}": value
                    for metric, value in direction_scores.as_dict().items()
                    if metric in ("bleu", "chrf", "ter")
                }
            )
    return scores, record
