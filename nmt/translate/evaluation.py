"""Scoring a checkpoint on a test set: the code `nmt eval` and the end of `nmt train` share."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from nmt.config import Experiment, apply_override, config_from_dict, config_to_dict, parse_override
from nmt.data.splits import ROLES, ParallelText, load_split, read_lines
from nmt.errors import UserError
from nmt.outputs import check_output, write_output
from nmt.scoring import Scores, SystemRow, compare, format_table, mean_scores, score
from nmt.search import Hypothesis
from nmt.terminal import ProgressLine
from nmt.translate.attention_stats import attention_stats
from nmt.translate.loading import PathLike
from nmt.translate.memory import band_scores
from nmt.translate.translator import Translator


@dataclass
class Evaluation:
    hypotheses: list[str]  # one detokenized translation per source line
    scores: Scores  # with the attention's statistics when there are any


@dataclass
class Comparison:
    """Systems scored on one test set, each after the first tested against it."""

    rows: list[SystemRow]
    signatures: dict[str, str]  # metric name -> sacrebleu signature

    def as_dict(self) -> dict:
        return {"systems": [asdict(row) for row in self.rows], "signatures": self.signatures}

    def summary(self) -> str:
        return format_table(self.rows, self.signatures)


@dataclass
class ByDirection:
    """A multilingual model's scores on each direction's split (a Comparison each when
    several systems are compared), and their mean."""

    reports: dict[str, Scores | Comparison]  # "de-en" -> report

    @property
    def mean(self) -> Scores | None:
        """The directions' mean scores; None when each direction compares several systems."""
        reports = list(self.reports.values())
        return mean_scores(reports) if all(isinstance(r, Scores) for r in reports) else None

    def as_dict(self) -> dict:
        found = {name: report.as_dict() for name, report in self.reports.items()}
        mean = self.mean
        return {"directions": found} | ({"mean": mean.as_dict()} if mean else {})

    def summary(self) -> str:
        reports, mean = self.reports, self.mean
        if mean is None:
            return "\n\n".join(f"{name}:\n{report.summary()}" for name, report in reports.items())
        width = max(len(name) for name in [*reports, "direction"])
        lines = [f"{'direction':<{width}}   BLEU   chrF    TER"]
        for name, scores in [*reports.items(), ("mean", mean)]:
            lines.append(
                f"{name:<{width}}  {scores.bleu:5.1f}  {scores.chrf:5.1f}  {scores.ter:5.1f}"
            )
        signatures = (mean.bleu_signature, mean.chrf_signature, mean.ter_signature)
        return "\n".join([*lines, *(f"  {signature}" for signature in signatures)])


def evaluate(
    translator: Any, text: ParallelText, tgt_lang: str | None = None, src_lang: str | None = None
) -> Evaluation:
    """Translates the source side of `text` (in `src_lang`, where known) with the
    translator's decode settings (into `tgt_lang`, for a model that writes several
    languages; through a pivot where nmt/translate/pivot.py says), a chunk at a time, and scores
    the translations against the target side; also measures the best hypotheses' attention
    (where the translator reports any). A progress line counts down on a terminal."""
    hypotheses: list[str] = []
    progress = ProgressLine(f"translating {text.origin}", len(text.src))
    memory = getattr(translator, "memory", None)

    def best() -> Iterator[Hypothesis]:
        for translation in translator.stream(
            text.src,
            tgt_lang=tgt_lang,
            src_lang=src_lang,
            attention=translator.reports_attention and memory is None,
            done=progress.advance,
        ):
            hypotheses.append(translation.text)
            if translation.hypotheses:
                yield translation.hypotheses[0]

    try:
        stats = attention_stats(best())
    finally:
        progress.close()
    scores = score(hypotheses, text.tgt)
    if stats is not None:
        scores = replace(scores, attention_entropy=stats.entropy, attention_nonzero=stats.nonzero)
    if memory is not None:
        scores = replace(scores, bands=band_scores(memory, text.src, hypotheses, text.tgt))
    return Evaluation(hypotheses, scores)


def checkpoint_split(
    config: Experiment,
    split: str,
    overrides: Sequence[str] = (),
    direction: tuple[str, str] | None = None,
) -> ParallelText:
    """The split that plays `split` (train, valid or test) in a checkpoint's corpus, in
    `direction` (source, target) for a model trained on several.

    `overrides` (`data.path=DIR`, ...) amend the checkpoint's own config, e.g. when the
    corpus has moved since training.
    """
    if split not in ROLES:
        raise UserError(f"--split must be one of {', '.join(ROLES)}, got '{split}'.")
    raw = config_to_dict(config)
    for override in overrides:
        apply_override(raw, *parse_override(override))
    config = config_from_dict(raw)
    if getattr(config.data.splits, split) is None:
        raise UserError(f"the checkpoint's config names no {split} split (data.splits.{split}).")
    return load_split(config.data.direction(*(direction or config.data.pairs[0])), split)


def read_test_set(src: PathLike | None, ref: PathLike | None) -> ParallelText | None:
    """A test set of one's own: source sentences and their reference translations, one a
    line (None: neither given, the checkpoint's own split is scored)."""
    if (src is None) != (ref is None):
        raise UserError("src and ref go together: a test set of your own needs both files.")
    if src is None:
        return None
    src, ref = Path(src), Path(ref)
    sources, references = _aligned("--src", src, ref)
    return ParallelText(sources, references, f"{src} / {ref.name}", (src, ref))


def score_files(hyps: Sequence[Path], ref: Path) -> Scores | Comparison:
    """Scores translations made elsewhere against their references, line by line: one file
    gives its Scores; several a Comparison, with p-values against the first."""
    systems = [(str(hyp), _aligned("--hyp", hyp, ref)[0]) for hyp in hyps]
    references = read_lines(ref, "--ref")
    if len(systems) == 1:
        return score(systems[0][1], references)
    return Comparison(*compare(systems, references))


def _keep(hypotheses: list[str], output: Path) -> None:
    """Writes the translations whole or not at all: a torn file would still score, wrongly."""
    write_output(output, "".join(line + "\n" for line in hypotheses).encode("utf-8"))


def _aligned(option: str, path: Path, ref: Path) -> tuple[list[str], list[str]]:
    lines, references = read_lines(path, "--hyp"), read_lines(ref, "--ref")
    if len(lines) != len(references):
        raise UserError(
            f"{option} {path} has {len(lines)} lines but --ref {ref} has {len(references)}; "
            "they must align line by line."
        )
    if not references:
        raise UserError(f"--ref {ref} has no lines: there is nothing to score.")
    return lines, references


def evaluate_run(
    checkpoints: PathLike | Sequence[PathLike],
    split: str = "test",
    src: PathLike | None = None,
    ref: PathLike | None = None,
    ensemble: bool = False,
    overrides: Sequence[str] = (),
    workers: int | None = None,
    tgt_lang: str | None = None,
    output: PathLike | None = None,
    **decode: Any,
) -> Scores | Comparison | ByDirection:
    """What `nmt eval --checkpoint` prints, as objects: the checkpoint(s) translate the
    `split` of their corpus (`overrides` such as "data.path=DIR" amend its config), or the
    test set `src` with references `ref`, and the translations are scored (one checkpoint:
    its Scores; several: a Comparison with p-values against the first, unless `ensemble`;
    a model of several directions: a ByDirection of those, one per direction of its
    `split`). `tgt_lang`: the language to translate `src` into, or the one whose directions
    to score. `workers`: batches decoded side by side (default: one per core). `output`: a
    file that keeps the translations, one a line, of one system in one direction, so that
    later systems can be tested against them (`nmt eval --hyp A --hyp B`). `decode`
    (beam=1, alpha=1.0, batch_size=32, ...) replaces their decode settings; with
    adapter=PATH among them, an adapter checkpoint goes on the one checkpoint."""
    paths = [checkpoints] if isinstance(checkpoints, (str, os.PathLike)) else list(checkpoints)
    test_set = read_test_set(src, ref)
    return score_checkpoints(
        paths, test_set, split, overrides, ensemble, workers, tgt_lang, output, **decode
    )


def score_checkpoints(
    checkpoints: Sequence[Path],
    test_set: ParallelText | None = None,
    split: str = "test",
    overrides: Sequence[str] = (),
    ensemble: bool = False,
    workers: int | None = None,
    tgt_lang: str | None = None,
    output: PathLike | None = None,
    **decode_overrides: Any,
) -> Scores | Comparison | ByDirection:
    """Translates a test set with each checkpoint in turn and scores the translations.

    The test set is `test_set` if given (translated into `tgt_lang`), else the `split` of
    each checkpoint's own corpus (see checkpoint_split; `overrides` amend its config), in
    each direction the first checkpoint was trained on (those into `tgt_lang`, if given).
    `decode_overrides` (beam=1, ...) replace each checkpoint's decode settings. One
    checkpoint gives its Scores; several give a Comparison, with sacrebleu's paired
    bootstrap p-values against the first, unless `ensemble` makes them one system, whose
    Scores come back; several directions give a ByDirection of those. `output` keeps the
    translations of a single system in a single direction.
    """
    if not checkpoints:
        raise UserError("no checkpoint to score.")
    if output is not None and len(checkpoints) > 1 and not ensemble:
        raise UserError(
            f"--output {output} keeps one system's translations, but {len(checkpoints)} "
            "checkpoints are compared: add --ensemble, or score them one at a time."
        )
    names, translators = load_systems(checkpoints, ensemble, workers, **decode_overrides)
    return score_systems(names, translators, test_set, split, overrides, tgt_lang, output)


def load_systems(
    checkpoints: Sequence[Path], ensemble: bool, workers: int | None, **decode_overrides: Any
) -> tuple[list[str], list[Translator]]:
    """Each system's name and Translator: each checkpoint, or all as one ensemble."""
    # Only the best translation is scored: an n-best list would cost time, and with nbest
    # above the beam size the checkpoint's decode section would refuse e.g. beam=1.
    decode_overrides = {"nbest": 1, **decode_overrides}
    systems = [list(checkpoints)] if ensemble else [[path] for path in checkpoints]
    names = [str(paths[0]) for paths in systems]
    translators = [Translator.load(paths, workers=workers, **decode_overrides) for paths in systems]
    return names, translators


def score_systems(
    names: list[str],
    translators: list[Translator],
    test_set: ParallelText | None = None,
    split: str = "test",
    overrides: Sequence[str] = (),
    tgt_lang: str | None = None,
    output: PathLike | None = None,
) -> Scores | Comparison | ByDirection:
    """The systems' scores, as score_checkpoints describes them, with translators loaded."""
    if test_set is not None:
        return _scored(names, translators, lambda _: test_set, split, tgt_lang, output)
    pairs = translators[0].config.data.pairs
    chosen = [pair for pair in pairs if tgt_lang in (None, pair[1])]
    if not chosen:
        raise UserError(
            f"--tgt-lang {tgt_lang}: the model translates {', '.join(map('-'.join, pairs))}, "
            f"none into {tgt_lang}; choose one of {', '.join(sorted({t for _, t in pairs}))}."
        )
    if output is not None and len(chosen) > 1:
        raise UserError(
            f"--output {output} keeps the translations of one direction, but the model's "
            f"{split} split has {len(chosen)} ({', '.join(map('-'.join, chosen))}): choose "
            "one with --tgt-lang, or give --src and --ref."
        )
    reports = {
        "-".join(pair): _scored(
            names,
            translators,
            lambda translator, pair=pair: checkpoint_split(
                translator.config, split, overrides, pair
            ),
            split,
            pair[1],
            output,
            pair[0],
        )
        for pair in chosen
    }
    return next(iter(reports.values())) if len(pairs) == 1 else ByDirection(reports)


def _scored(
    names: list[str],
    translators: list[Translator],
    text_of: Any,
    split: str,
    tgt_lang: str | None,
    output: PathLike | None = None,
    src_lang: str | None = None,
) -> Scores | Comparison:
    """Each translator's translations of its text (text_of(translator)), scored; those of
    the one translator written to `output`, if given."""
    evaluations, references = [], None
    for translator in translators:
        text = text_of(translator)
        if output is not None:  # before translating: the split may not be written over
            check_output(Path(output), "--output", [(f"the {split} split", f) for f in text.files])
        if references is not None and text.tgt != references:
            raise UserError(
                "the checkpoints' configs name different corpora for the "
                f"{split} split; compare systems on the same references."
            )
        references = text.tgt
        evaluations.append(evaluate(translator, text, tgt_lang, src_lang))
    if len(evaluations) == 1:
        if output is not None:
            _keep(evaluations[0].hypotheses, Path(output))
        return evaluations[0].scores
    named = [(name, e.hypotheses) for name, e in zip(names, evaluations, strict=True)]
    rows, signatures = compare(named, references)
    rows = [
        replace(
            row,
            attention_entropy=e.scores.attention_entropy,
            attention_nonzero=e.scores.attention_nonzero,
        )
        for row, e in zip(rows, evaluations, strict=True)
    ]
    return Comparison(rows, signatures)
