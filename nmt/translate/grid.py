"""Decode settings chosen by measurement: one system scored under every combination of some
settings (`nmt eval --beam 5 --beam 10 --alpha 0.6 --alpha 1.0 --split valid`), a row each,
and the best by BLEU. Choose on valid; score the choice on test once."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nmt.errors import UserError
from nmt.scoring import Scores
from nmt.translate.evaluation import ByDirection, load_systems, read_test_set, score_systems
from nmt.translate.loading import PathLike, checkpoint_paths


@dataclass
class Grid:
    """Scores (a multilingual model's: the mean over its directions) per setting."""

    rows: list[tuple[dict[str, Any], Scores]]  # (settings, their scores), in the order run

    @property
    def best(self) -> dict[str, Any]:
        """The settings of the highest BLEU (the first of equals), without those that do
        not apply (greedy search's alpha)."""
        settings = max(self.rows, key=lambda row: row[1].bleu)[0]
        return {name: value for name, value in settings.items() if value is not None}

    def as_dict(self) -> dict:
        rows = [{**settings, **scores.as_dict()} for settings, scores in self.rows]
        return {"grid": rows, "best": self.best}

    def summary(self) -> str:
        names = list(self.rows[0][0])
        lines = ["  ".join(f"{name:>6}" for name in names) + "    BLEU   chrF    TER"]
        for settings, scores in self.rows:
            values = "  ".join(f"{_shown(settings[name]):>6}" for name in names)
            lines.append(f"{values}  {scores.bleu:6.1f} {scores.chrf:6.1f} {scores.ter:6.1f}")
        best = ", ".join(f"{name} {value}" for name, value in self.best.items())
        first = self.rows[0][1]
        signatures = (first.bleu_signature, first.chrf_signature, first.ter_signature)
        lines.append(f"best: {best}")
        return "\n".join([*lines, *(f"  {signature}" for signature in signatures)])


def _shown(value: Any) -> str:
    return "-" if value is None else str(value)


def evaluate_grid(
    checkpoints: PathLike | Sequence[PathLike],
    grid: dict[str, list[Any]],
    ensemble: bool = False,
    split: str = "test",
    src: PathLike | None = None,
    ref: PathLike | None = None,
    overrides: Sequence[str] = (),
    workers: int | None = None,
    tgt_lang: str | None = None,
    **decode: Any,
) -> Grid:
    """What `evaluate_run` scores (the same arguments), under each combination of the values
    in `grid` (e.g. {"beam": [5, 10], "alpha": [0.6, 1.0]}), in order, with the models loaded
    once. Greedy search (beam 1) ignores alpha, so it gets one row, whose alpha is None. One
    system only: one checkpoint, or several as an ensemble."""
    paths = checkpoint_paths(checkpoints)
    if len(paths) > 1 and not ensemble:
        raise UserError(
            "several --beam or --alpha values score a grid of one system: give one "
            "--checkpoint, or add --ensemble."
        )
    test_set = read_test_set(src, ref)
    names, (translator,) = load_systems(paths, True, workers, **decode)
    rows: list[tuple[dict[str, Any], Scores]] = []
    names_of_settings = list(grid)
    for values in itertools.product(*grid.values()):
        settings = dict(zip(names_of_settings, values, strict=True))
        if settings.get("beam", translator.decode.beam) == 1 and "alpha" in settings:
            if any(done.get("alpha", 0) is None for done, _ in rows):
                continue
            settings["alpha"] = None  # greedy search ranks nothing by length
        tuned = translator.with_decode(**{k: v for k, v in settings.items() if v is not None})
        report = score_systems(names, [tuned], test_set, split, overrides, tgt_lang)
        rows.append((settings, report.mean if isinstance(report, ByDirection) else report))
    return Grid(rows)
