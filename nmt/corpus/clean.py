"""`nmt clean`: a cleaned copy of a corpus, laid out as training reads it, with the reason
for every pair removed and a report.

The train split of each direction is streamed through the rule-based filters
(nmt/data/cleaning.py) on every core; the kept pairs are written in input order, each
removed one to `removed.tsv` (direction, line, filter, what it saw, the pair), and the
valid and test splits are copied as they are, so the directory is a corpus `nmt train`
reads (`--set data.path=DIR`). Everything is written into a sibling staging directory and
renamed into place at the end: an interrupted clean leaves no half-cleaned corpus, and the
same command starts it again from the top.

Optionally a model-scored filter follows (nmt/corpus/dual_scores.py): dual conditional
cross-entropy (Junczys-Dowmunt 2018) under a forward and a backward model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from nmt.config import CleanConfig, DataConfig
from nmt.cores import available_cores
from nmt.corpus.corpus_files import copy_splits, corpus_name, planned_directions
from nmt.corpus.distill_manifest import Direction
from nmt.corpus.dual_scores import DualScoring, check_models, score_and_select
from nmt.data.cleaning import Cleaner, held_out_sentences, warn_unjudged
from nmt.data.splits import locate, open_corpus_file, read_pairs, split_files
from nmt.errors import UserError
from nmt.outputs import check_output_directory, staged
from nmt.terminal import ProgressLine

log = logging.getLogger("nmt")

REPORT = "report.json"
REMOVED = "removed.tsv"
FIELDS = "direction\tline\tfilter\tdetail\tsource\ttarget\n"


@dataclass(frozen=True)
class Cleaned:
    """What `nmt clean` wrote and what its report says."""

    directory: Path
    report: dict


def clean_corpus(
    data: DataConfig,
    clean: CleanConfig,
    out: Path,
    workers: int | None = None,
    overwrite: bool = False,
    scoring: DualScoring | None = None,
) -> Cleaned:
    """Writes the cleaned copy of `data`'s corpus (its train split, each direction) to
    `out`: new, empty, or with `overwrite` an earlier clean's. `workers` processes judge
    the pairs (default: one per core)."""
    out = Path(out)
    _check_output(data, out, overwrite)
    if scoring is not None:
        check_models(scoring, data.pairs)
    workers = workers or available_cores()
    warn_unjudged(clean, {language for pair in data.pairs for language in pair})
    started = time.monotonic()
    with staged(out, "--out") as staging:
        directions = {}
        for pair, direction in zip(data.pairs, planned_directions(data), strict=True):
            directions[direction.name] = _clean_direction(
                data.direction(*pair), clean, direction, staging, workers, scoring is not None
            )
        if scoring is not None:
            for pair, direction in zip(data.pairs, planned_directions(data), strict=True):
                chosen = score_and_select(scoring, pair, direction, staging)
                _merge_scores(directions[direction.name], chosen)
        copied = copy_splits(data, staging)
        report = _report(data, clean, directions, copied, time.monotonic() - started)
        (staging / REPORT).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    return Cleaned(out, report)


def _check_output(data: DataConfig, out: Path, overwrite: bool) -> None:
    """`out` must be new, empty, or (with `overwrite`) an earlier clean's; never the corpus
    itself, which is only read."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; nmt clean writes a corpus directory.")
    check_output_directory(out, "--out", split_files(data))
    if not out.is_dir() or not any(out.iterdir()):
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"--out {out}: cannot create {out.parent} ({error}).") from None
        return
    if not (out / REPORT).is_file():
        found = ", ".join(sorted(path.name for path in out.iterdir())[:6])
        raise UserError(
            f"--out {out} holds files ({found}) but no {REPORT}, so no clean wrote it. "
            "Choose a new or empty directory."
        )
    if not overwrite:
        raise UserError(
            f"--out {out} holds a cleaned corpus already; pass --overwrite to replace it, "
            "or choose another directory."
        )


def _clean_direction(
    data: DataConfig,
    clean: CleanConfig,
    direction: Direction,
    staging: Path,
    workers: int,
    numbered: bool,
) -> dict:
    """Streams one direction's train split through the filters into the staging files;
    its report. `numbered`: also keep each kept pair's line (for the model's scores)."""
    (source, target) = (data.src_lang, data.tgt_lang)
    cleaner = Cleaner(clean, source, target, held_out_sentences(data))
    progress = ProgressLine(f"cleaning {direction.name}", _lines(data))
    with contextlib.ExitStack() as files:
        kept_src, kept_tgt = (
            files.enter_context((staging / name).open("w", encoding="utf-8"))
            for name in (direction.source, direction.target)
        )
        removed = files.enter_context((staging / REMOVED).open("a", encoding="utf-8"))
        if numbered:  # the kept pairs' lines, for the model-scored filter's report
            lines = files.enter_context((staging / f".{direction.name}.lines").open("w"))
        if removed.tell() == 0:
            removed.write(FIELDS)
        files.callback(progress.close)
        for judged in cleaner.clean(read_pairs(data), workers):
            if judged.removed_by is None:
                kept_src.write(_one_line(judged.src) + "\n")
                kept_tgt.write(_one_line(judged.tgt) + "\n")
                if numbered:
                    lines.write(f"{judged.number}\n")
            else:
                _write_removed(removed, direction.name, judged)
            progress.advance(1)
    report = cleaner.report()
    if cleaner.ratio is not None:
        median, spread = cleaner.ratio
        report["length_ratio"] = {
            "median_log_ratio": round(median, 4),
            "deviation": round(spread, 4),
        }
    return report


def _lines(data: DataConfig) -> int | None:
    """The train split's pairs, where a count costs little (a text file)."""
    location = locate(data, "train")
    if location.kind != "text":
        return None
    with open_corpus_file(location.files[0]) as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


def _write_removed(sink: TextIO, direction: str, judged) -> None:
    fields = (judged.removed_by, judged.detail, judged.src, judged.tgt)
    sink.write(f"{direction}\t{judged.number}\t" + "\t".join(map(_cell, fields)) + "\n")


def _cell(text: str) -> str:
    return _one_line(text).replace("\t", " ")


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


def _merge_scores(report: dict, chosen: dict) -> None:
    """The model-scored filter's removals into a direction's report."""
    report["removed"]["dual_cross_entropy"] = chosen["removed"]
    report["pairs_out"] -= chosen["removed"]
    report["dual_cross_entropy"] = {k: v for k, v in chosen.items() if k != "removed"}


def _report(
    data: DataConfig, clean: CleanConfig, directions: dict, copied: tuple[str, ...], seconds: float
) -> dict:
    pairs_in = sum(d["pairs_in"] for d in directions.values())
    return {
        "corpus": corpus_name(data),
        "pairs_in": pairs_in,
        "pairs_out": sum(d["pairs_out"] for d in directions.values()),
        "repaired": _summed(directions, "repaired"),
        "removed": _summed(directions, "removed"),
        "directions": directions,
        "copied": list(copied),
        "settings": dataclasses.asdict(clean),
        "seconds": round(seconds, 1),
        "pairs_per_second": round(pairs_in / max(seconds, 1e-9)),
    }


def _summed(directions: dict, key: str) -> dict[str, int]:
    """The directions' counts under `key` ("removed", "repaired"), name by name."""
    total: dict[str, int] = {}
    for direction in directions.values():
        for name, count in direction[key].items():
            total[name] = total.get(name, 0) + count
    return total
