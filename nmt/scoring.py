"""Corpus scores with sacrebleu, reported with their signatures so they can be reproduced."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # its tokenization hints are noise here


@dataclass
class Scores:
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    # Of the attention behind the translations (nmt/translate/attention_stats.py), per target
    # token: the mean entropy in nats and the mean number of non-zero weights. None when the
    # translations came from elsewhere.
    attention_entropy: float | None = None
    attention_nonzero: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        lines = [
            f"BLEU {self.bleu:.1f}  ({self.bleu_signature})",
            f"chrF {self.chrf:.1f}  ({self.chrf_signature})",
        ]
        if self.attention_entropy is not None:
            lines.append(
                f"attention per target token: entropy {self.attention_entropy:.3f} nats, "
                f"{self.attention_nonzero:.2f} non-zero weights"
            )
        return "\n".join(lines)


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


@dataclass
class SystemRow:
    name: str
    bleu: float
    chrf: float
    bleu_p: float | None  # paired bootstrap p-value against the first system
    chrf_p: float | None
    attention_entropy: float | None = None  # as in Scores
    attention_nonzero: float | None = None


def compare(
    systems: Sequence[tuple[str, Sequence[str]]], references: Sequence[str], samples: int = 1000
) -> tuple[list[SystemRow], dict[str, str]]:
    """Scores every system and tests each against the first with sacrebleu's paired bootstrap
    resampling; returns the rows and the metrics' signatures."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    metrics = {
        "BLEU": BLEU(references=[list(references)]),
        "chrF": CHRF(references=[list(references)]),
    }
    test = PairedTest(
        [(name, list(h)) for name, h in systems],
        metrics,
        references=None,
        test_type="bs",
        n_samples=samples,
    )
    signatures, results = test()
    bleu, chrf = results["BLEU"], results[next(k for k in results if k.startswith("chrF"))]
    rows = [
        SystemRow(name, float(f"{b.score:.1f}"), float(f"{c.score:.1f}"), b.p_value, c.p_value)
        for (name, _), b, c in zip(systems, bleu, chrf, strict=True)
    ]
    return rows, {name: str(signature) for name, signature in signatures.items()}


def format_table(rows: Sequence[SystemRow], signatures: dict[str, str]) -> str:
    width = max(len(row.name) for row in rows)
    attention = any(row.attention_entropy is not None for row in rows)
    header = f"{'system':<{width}}   BLEU  p(BLEU)   chrF  p(chrF)"
    lines = [header + ("  entropy  non-zero" if attention else "")]
    for row in rows:
        p_bleu = "-" if row.bleu_p is None else f"{row.bleu_p:.4f}"
        p_chrf = "-" if row.chrf_p is None else f"{row.chrf_p:.4f}"
        line = f"{row.name:<{width}}  {row.bleu:5.1f}  {p_bleu:>7}  {row.chrf:5.1f}  {p_chrf:>7}"
        if attention:
            entropy, nonzero = row.attention_entropy, row.attention_nonzero
            line += (
                "        -         -" if entropy is None else f"  {entropy:7.3f}  {nonzero:8.2f}"
            )
        lines.append(line)
    lines.append("p: paired bootstrap resampling against the first system (sacrebleu)")
    if attention:
        lines.append("entropy (nats), non-zero weights: of the attention, per target token")
    lines.extend(f"{name}: {signature}" for name, signature in signatures.items())
    return "\n".join(lines)
