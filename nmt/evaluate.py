"""Corpus scores with sacrebleu, reported with their signatures so they can be reproduced."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass
class Scores:
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        return (
            f"BLEU {self.bleu:.1f}  ({self.bleu_signature})\n"
            f"chrF {self.chrf:.1f}  ({self.chrf_signature})"
        )


def score(hypotheses: Sequence[str], references: Sequence[str]) -> Scores:
    """BLEU and chrF exactly as the `sacrebleu` command computes and rounds them."""
    from sacrebleu.metrics import BLEU, CHRF

    bleu, chrf = BLEU(), CHRF()
    bleu_score = bleu.corpus_score(list(hypotheses), [list(references)])
    chrf_score = chrf.corpus_score(list(hypotheses), [list(references)])
    return Scores(
        bleu=float(f"{bleu_score.score:.1f}"),
        chrf=float(f"{chrf_score.score:.1f}"),
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
    )
