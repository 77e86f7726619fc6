"""Corpus scores with sacrebleu (BLEU, chrF, TER), reported with their signatures so they can be
reproduced. Higher BLEU and chrF are better; TER is an edit rate, lower is better."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # its tokenization hints are noise here


@dataclass
class Scores:
    bleu: float
    chrf: float
    ter: float
    bleu_signature: str
    chrf_signature: str
    ter_signature: str
    # Of the attention behind the translations (nmt/translate/attention_stats.py), per target
    # token: the mean entropy in nats and the mean number of non-zero weights. None when the
    # translations came from elsewhere.
    attention_entropy: float | None = None
    attention_nonzero: float | None = None
    # With a translation memory: per band of the source's best fuzzy match (exact, 90-100,
    # 70-90, 50-70, no match), its lines and their BLEU (nmt/translate/memory.py)
    bands: dict[str, dict[str, float]] | None = None

    def as_dict(self) -> dict:
        """The fields, `bands` only where a translation memory gave them."""
        found = asdict(self)
        if self.bands is None:
            del found["bands"]
        return found

    def summary(self) -> str:
        lines = [
            f"BLEU {self.bleu:.1f}  ({self.bleu_signature})",
            f"chrF {self.chrf:.1f}  ({self.chrf_signature})",
            f"TER  {self.ter:.1f}  ({self.ter_signature})",
        ]
        if self.attention_entropy is not None:
            lines.append(
                f"attention per target token: entropy {self.attention_entropy:.3f} nats, "
                f"{self.attention_nonzero:.2f} non-zero weights"
            )
        if self.bands is not None:
            shown = [
                f"{band} {found['lines']:.0f} lines BLEU {found['bleu']:.1f}"
                for band, found in self.bands.items()
            ]
            lines.append(f"by translation-memory match: {'; '.join(shown)}")
        return "\n".join(lines)


def metrics(references: Sequence[str] | None = None) -> dict:
    """sacrebleu's BLEU, chrF and TER with their default settings (`references` cached)."""
    from sacrebleu.metrics import BLEU, CHRF, TER

    cached = None if references is None else [list(references)]
    return {
        "BLEU": BLEU(references=cached),
        "chrF": CHRF(references=cached),
        "TER": TER(references=cached),
    }


def score(hypotheses: Sequence[str], references: Sequence[str]) -> Scores:
    """BLEU, chrF and TER exactly as the `sacrebleu` command computes and rounds them."""
    bleu, chrf, ter = metrics().values()
    found = [m.corpus_score(list(hypotheses), [list(references)]).score for m in (bleu, chrf, ter)]
    return Scores(
        *(float(f"{value:.1f}") for value in found),
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        ter_signature=str(ter.get_signature()),
    )


def mean_scores(scores: Sequence[Scores]) -> Scores:
    """The mean of several test sets' scores (a multilingual model's directions), each
    direction counting once whatever its size."""

    def mean(values: list[float | None]) -> float | None:
        return None if None in values else round(sum(values) / len(values), 2)

    first = scores[0]
    return Scores(
        *(mean([getattr(s, key) for s in scores]) for key in ("bleu", "chrf", "ter")),
        first.bleu_signature,
        first.chrf_signature,
        first.ter_signature,
        mean([s.attention_entropy for s in scores]),
        mean([s.attention_nonzero for s in scores]),
    )


@dataclass
class SystemRow:
    name: str
    bleu: float
    chrf: float
    ter: float
    bleu_p: float | None  # paired bootstrap p-value against the first system
    chrf_p: float | None
    ter_p: float | None
    attention_entropy: float | None = None  # as in Scores
    attention_nonzero: float | None = None


def compare(
    systems: Sequence[tuple[str, Sequence[str]]], references: Sequence[str], samples: int = 1000
) -> tuple[list[SystemRow], dict[str, str]]:
    """Scores every system and tests each against the first with sacrebleu's paired bootstrap
    resampling; returns the rows and the metrics' signatures."""
    from sacrebleu.significance import PairedTest

    test = PairedTest(
        [(name, list(h)) for name, h in systems],
        metrics(references),
        references=None,
        test_type="bs",
        n_samples=samples,
    )
    signatures, results = test()
    columns = [
        results[next(k for k in results if k.startswith(m))] for m in ("BLEU", "chrF", "TER")
    ]
    rows = [
        SystemRow(
            name,
            *(float(f"{result.score:.1f}") for result in found),
            *(result.p_value for result in found),
        )
        for (name, _), *found in zip(systems, *columns, strict=True)
    ]
    return rows, {name: str(signature) for name, signature in signatures.items()}


def format_table(rows: Sequence[SystemRow], signatures: dict[str, str]) -> str:
    width = max(len(row.name) for row in rows)
    attention = any(row.attention_entropy is not None for row in rows)
    header = f"{'system':<{width}}   BLEU  p(BLEU)   chrF  p(chrF)    TER   p(TER)"
    lines = [header + ("  entropy  non-zero" if attention else "")]
    for row in rows:
        line = f"{row.name:<{width}}"
        for value, p in ((row.bleu, row.bleu_p), (row.chrf, row.chrf_p), (row.ter, row.ter_p)):
            line += f"  {value:5.1f}  {'-' if p is None else f'{p:.4f}':>7}"
        if attention:
            entropy, nonzero = row.attention_entropy, row.attention_nonzero
            line += (
                "        -         -" if entropy is None else f"  {entropy:7.3f}  {nonzero:8.2f}"
            )
        lines.append(line)
    lines.append(
        "p: paired bootstrap resampling against the first system (sacrebleu); TER: lower is better"
    )
    if attention:
        lines.append("entropy (nats), non-zero weights: of the attention, per target token")
    lines.extend(f"{name}: {signature}" for name, signature in signatures.items())
    return "\n".join(lines)
