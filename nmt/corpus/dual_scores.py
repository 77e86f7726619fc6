"""The model-scored filter of `nmt clean`: dual conditional cross-entropy (Junczys-Dowmunt
2018, first in the WMT18 corpus filtering task).

Two models of one language pair, trained in opposite directions, score each pair: H_f, the
forward model's cross-entropy of the target given the source per target token (minus
`nmt score`'s mean log-probability), and H_b, the backward model's of the source given the
target. A pair is translation-like when both are low and agree:

    dual = |H_f - H_b| + (H_f + H_b) / 2        (lower is better)

A misaligned pair (a target of another source) gets a high H_f and H_b, which no rule can
see. The best fraction is kept, or those at most a threshold. The pairs the rules kept are
scored a chunk at a time with every core (the Translator's workers); what is kept per pair
is three floats and its line number, and every pair's scores go to `scores.tsv`.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nmt.corpus.distill_manifest import Direction
from nmt.errors import UserError
from nmt.terminal import ProgressLine
from nmt.translate.pipeline import CHUNK_LINES
from nmt.translate.translator import Translator

SCORES = "scores.tsv"


@dataclass(frozen=True)
class DualScoring:
    """Which models score, and which pairs stay: the best `keep_best` fraction, or those
    whose dual cross-entropy is at most `max_score` (one of the two)."""

    forward: Path  # a checkpoint (or run directory) translating source -> target
    backward: Path  # and one translating target -> source
    keep_best: float | None = None
    max_score: float | None = None
    workers: int | None = None  # the Translators' (default: one per core)

    def __post_init__(self) -> None:
        if (self.keep_best is None) == (self.max_score is None):
            raise UserError(
                "scoring with --score-with keeps the best --keep-best F of the pairs, or those "
                "of dual cross-entropy at most --max-score S: give one of the two."
            )
        if self.keep_best is not None and not 0 < self.keep_best <= 1:
            raise UserError(f"--keep-best must be in (0, 1], got {self.keep_best}.")


def score_and_select(
    scoring: DualScoring, pair: tuple[str, str], direction: Direction, staging: Path
) -> dict:
    """Scores the pairs the rules kept in `staging`'s files of `direction` (a line number
    each in its `.lines` file), appends every pair's scores to scores.tsv and the removed
    to removed.tsv, and rewrites the files with the pairs kept. What it removed, and how."""
    source, target = pair
    files = (staging / direction.source, staging / direction.target)
    numbers = np.loadtxt(staging / f".{direction.name}.lines", dtype=np.int64, ndmin=1)
    forward, backward = _cross_entropies(scoring, files, pair, len(numbers))
    dual = np.abs(forward - backward) + (forward + backward) / 2
    kept = _selected(dual, scoring)
    _write_scores(staging / SCORES, direction.name, numbers, forward, backward, dual, kept)
    _rewrite(files, kept, staging / "removed.tsv", direction.name, numbers, dual)
    (staging / f".{direction.name}.lines").unlink()
    finite = dual[np.isfinite(dual)]
    return {
        "removed": int((~kept).sum()),
        "threshold": None if not kept.any() else round(float(dual[kept].max()), 4),
        "median": round(float(np.median(finite)), 4) if finite.size else None,
        "forward": str(scoring.forward),
        "backward": str(scoring.backward),
    }


def check_models(scoring: DualScoring, pairs: list[tuple[str, str]]) -> None:
    """Loads both models and checks that each writes the side it scores of every pair: a
    wrong or swapped model is an error before the rules' pass, not after it."""
    forward = _translator(Path(scoring.forward), scoring.workers)
    backward = _translator(Path(scoring.backward), scoring.workers)
    for pair in pairs:
        _check_languages(forward, backward, pair, scoring)


@functools.lru_cache(maxsize=4)
def _translator(checkpoint: Path, workers: int | None) -> Translator:
    return Translator.load(checkpoint, workers=workers)


def _cross_entropies(
    scoring: DualScoring, files: tuple[Path, Path], pair: tuple[str, str], count: int
) -> tuple[np.ndarray, np.ndarray]:
    """H_f and H_b of each pair of the two files, [count] each; inf where unscored."""
    forward = _translator(Path(scoring.forward), scoring.workers)
    backward = _translator(Path(scoring.backward), scoring.workers)
    _check_languages(forward, backward, pair, scoring)
    results = (np.full(count, np.inf), np.full(count, np.inf))
    progress = ProgressLine("scoring pairs both ways", count)
    start = 0
    try:
        with files[0].open(encoding="utf-8") as sources, files[1].open(encoding="utf-8") as targets:
            lines = zip(sources, targets, strict=True)
            while chunk := list(itertools.islice(lines, CHUNK_LINES)):
                src = [s.rstrip("\n") for s, _ in chunk]
                tgt = [t.rstrip("\n") for _, t in chunk]
                for model, given, scored, language, into in (
                    (forward, src, tgt, pair[1], results[0]),
                    (backward, tgt, src, pair[0], results[1]),
                ):
                    scores = model.score(given, scored, tgt_lang=_asked(model, language))
                    into[start : start + len(chunk)] = [
                        math.inf if s.total is None else -s.mean for s in scores
                    ]
                start += len(chunk)
                progress.advance(len(chunk))
    finally:
        progress.close()
    return results


def _asked(model: Translator, language: str) -> str | None:
    return language if len(model.target_languages) > 1 else None


def _check_languages(
    forward: Translator, backward: Translator, pair: tuple[str, str], scoring: DualScoring
) -> None:
    """Each model must write the language it scores, where its config names its languages."""
    for model, path, writes, option in (
        (forward, scoring.forward, pair[1], "--score-with"),
        (backward, scoring.backward, pair[0], "--score-with-backward"),
    ):
        if writes not in model.target_languages:
            raise UserError(
                f"{option} {path} writes {', '.join(model.target_languages)}, but it scores "
                f"the {writes} side of {pair[0]}-{pair[1]}: the forward model translates the "
                "corpus's source language into its target, the backward model the other way."
            )


def _selected(dual: np.ndarray, scoring: DualScoring) -> np.ndarray:
    """Which pairs stay, [count] bools: the best fraction (ties in input order), or those
    at most the threshold."""
    if scoring.max_score is not None:
        return dual <= scoring.max_score
    keep = math.ceil(scoring.keep_best * dual.size)
    chosen = np.zeros(dual.size, dtype=bool)
    chosen[np.argsort(dual, kind="stable")[:keep]] = True
    return chosen & np.isfinite(dual)


def _write_scores(path: Path, direction: str, numbers, forward, backward, dual, kept) -> None:
    new = not path.exists()
    with path.open("a", encoding="utf-8") as sink:
        if new:
            sink.write("direction\tline\tforward\tbackward\tdual_cross_entropy\tkept\n")
        for row in zip(numbers.tolist(), forward, backward, dual, kept.tolist(), strict=True):
            number, h_f, h_b, score, stays = row
            sink.write(f"{direction}\t{number}\t{h_f:.4f}\t{h_b:.4f}\t{score:.4f}\t{int(stays)}\n")


def _rewrite(files, kept, removed_file: Path, direction: str, numbers, dual) -> None:
    """The two files with only the kept pairs; the others to removed.tsv."""
    fresh = [file.with_name(file.name + ".kept") for file in files]
    with (
        files[0].open(encoding="utf-8") as sources,
        files[1].open(encoding="utf-8") as targets,
        fresh[0].open("w", encoding="utf-8") as kept_src,
        fresh[1].open("w", encoding="utf-8") as kept_tgt,
        removed_file.open("a", encoding="utf-8") as removed,
    ):
        for index, (src, tgt) in enumerate(zip(sources, targets, strict=True)):
            if kept[index]:
                kept_src.write(src)
                kept_tgt.write(tgt)
            else:
                detail = f"dual cross-entropy {dual[index]:.3f}"
                pair = "\t".join(side.rstrip("\n").replace("\t", " ") for side in (src, tgt))
                fields = f"{direction}\t{numbers[index]}\tdual_cross_entropy\t{detail}"
                removed.write(f"{fields}\t{pair}\n")
    for file, new in zip(files, fresh, strict=True):
        new.replace(file)
