"""Sequence-level knowledge distillation (Kim & Rush 2016): a teacher, one checkpoint or an
ensemble, translates the train split of its corpus with beam (or greedy) search, and a
student trained on those translations instead of the references learns the teacher's mode
rather than the spread of human translations: a smaller or greedy student nearly matches
its beam-searched teacher.

`distil` writes a corpus directory (nmt/corpus/corpus_files.py) and its manifest
(nmt/corpus/distill_manifest.py). The sources are translated a chunk of `chunk_lines`
at a time, each chunk sorted into batches as `nmt translate --input` sorts its chunks (the
same CHUNK_LINES), so the targets equal `nmt translate`'s of the same sources. Each chunk's
translations are appended to the target file and synced before the manifest records them:
an interrupted run leaves a prefix of whole chunks, perhaps plus a torn one, and the same
command finishes it, cutting the torn chunk off and translating from the next boundary.
Beam and greedy search are deterministic and a chunk's batches depend on its lines alone,
so the finished corpus is byte for byte the one an uninterrupted run writes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmt.checkpoint import checkpoint_file
from nmt.config import DataConfig
from nmt.corpus.corpus_files import (
    copy_splits,
    corpus_config,
    corpus_name,
    planned_directions,
    write_sources,
)
from nmt.corpus.distill_manifest import (
    MANIFEST,
    Direction,
    Manifest,
    Settings,
    Teacher,
    read_manifest,
    unwritable,
)
from nmt.data.splits import split_files
from nmt.errors import UserError
from nmt.outputs import check_output_directory
from nmt.terminal import ProgressLine
from nmt.translate.loading import PathLike, checkpoint_paths
from nmt.translate.pipeline import CHUNK_LINES
from nmt.translate.shortlist import shortlist_file
from nmt.translate.translator import Translator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Distilled:
    """What a call did: the corpus's manifest, the lines it translated (0: the corpus was
    complete already) and those earlier calls had translated (a resume's head start)."""

    manifest: Manifest
    translated: int
    earlier: int


def distil(
    checkpoints: PathLike | Sequence[PathLike],
    out: PathLike,
    data: PathLike | None = None,
    workers: int | None = None,
    quantize: str | None = None,
    overwrite: bool = False,
    chunk_lines: int = CHUNK_LINES,
    **decode: Any,
) -> Distilled:
    """Translates the train split of the checkpoints' corpus (or of the directory `data`)
    into the corpus directory `out`, every direction of a multilingual teacher, with the
    first checkpoint's decode settings replaced by `decode` (beam=5, alpha=1.0,
    batch_size=64, ...); `workers` batches side by side (default: one per core). An
    unfinished corpus in `out` made with the same settings is finished; one made with
    others is refused, or with `overwrite` started afresh."""
    if decode.get("sample") or decode.get("nbest", 1) != 1:
        raise UserError(
            "distillation keeps one translation per source, the best of beam (or greedy) "
            "search: drop sample and nbest."
        )
    if chunk_lines < 1:
        raise UserError(f"chunk_lines must be at least 1, got {chunk_lines}.")
    out = Path(out)
    translator = Translator.load(
        checkpoints, quantize=quantize, workers=workers, **{**decode, "nbest": 1, "sample": False}
    )
    corpus = corpus_config(translator.config.data, None if data is None else Path(data))
    settings = Settings(
        _teachers(checkpoints),
        dataclasses.asdict(translator.decode),
        quantize,
        translator.device.type,
        chunk_lines,
        corpus_name(corpus),
        _shortlist_sha256(checkpoints, translator.decode.shortlist),
    )
    manifest = _started(out, corpus, settings, overwrite)
    earlier = sum(d.translated for d in manifest.directions)
    if manifest.complete:
        return Distilled(manifest, 0, earlier)
    try:
        if any(d.lines is None for d in manifest.directions):
            manifest = _prepared(out, corpus, manifest)
        for pair, direction in zip(corpus.pairs, manifest.directions, strict=True):
            if not direction.done:
                manifest = _translated(translator, out, manifest, direction, pair)
    except KeyboardInterrupt:
        log.warning("warning: %s is unfinished; run the same command again to finish it.", out)
        raise
    manifest = dataclasses.replace(manifest, complete=True)
    manifest.save(out)
    return Distilled(manifest, sum(d.translated for d in manifest.directions) - earlier, earlier)


def _teachers(checkpoints: PathLike | Sequence[PathLike]) -> tuple[Teacher, ...]:
    paths = [checkpoint_file(path) for path in checkpoint_paths(checkpoints)]
    return tuple(Teacher(str(path), _sha256(path)) for path in paths)


def _shortlist_sha256(checkpoints: PathLike | Sequence[PathLike], best: int) -> str | None:
    """The shortlist decodes with K > 0 is the first checkpoint's: rebuilt, it translates
    differently, so a resume compares its bytes too."""
    if not best:
        return None
    return _sha256(shortlist_file(checkpoint_paths(checkpoints)[0]))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _started(out: Path, corpus: DataConfig, settings: Settings, overwrite: bool) -> Manifest:
    """The manifest to go on from: the one in `out` when its settings are these, else a
    fresh one (for a new or empty `out`; with `overwrite`, removing the files of the
    distillation in `out`)."""
    fresh = Manifest(settings=settings, directions=planned_directions(corpus))
    if out.exists() and not out.is_dir():
        raise UserError(
            f"--out {out} is a file; nmt distill writes a corpus directory. Choose a new or "
            "empty directory."
        )
    check_output_directory(out, "--out", split_files(corpus))
    old = read_manifest(out) if out.is_dir() else None
    if old is None:
        found = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
        if found:
            raise UserError(
                f"--out {out} holds files ({', '.join(found[:6])}) but no {MANIFEST}, so it is "
                "no corpus nmt distill started. Choose a new or empty directory (nmt distill "
                "replaces only what it wrote itself)."
            )
        return fresh
    differences = old.settings.differences(settings)
    if not (differences or overwrite):
        return old
    if not overwrite:
        raise UserError(
            f"--out {out} holds a distillation made with other settings (its {MANIFEST} -> "
            f"this command: {'; '.join(differences)}). Rerun with the settings its manifest "
            "names to finish it, pass --overwrite to start afresh, or choose another --out."
        )
    for name in old.files:
        (out / name).unlink(missing_ok=True)
    return fresh


def _prepared(out: Path, corpus: DataConfig, manifest: Manifest) -> Manifest:
    """Writes the sources and copies valid and test; the manifest, saved first and last,
    marks the directory as this distillation's throughout."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        manifest.save(out)
        copied = copy_splits(corpus, out)
        directions = []
        for pair, direction in zip(corpus.pairs, manifest.directions, strict=True):
            lines = write_sources(corpus, pair, out / direction.source)
            (out / direction.target).write_bytes(b"")
            directions.append(dataclasses.replace(direction, lines=lines))
    except OSError as error:
        raise unwritable(error, out) from None
    manifest = dataclasses.replace(manifest, directions=tuple(directions), copied=copied)
    manifest.save(out)
    return manifest


def _translated(
    translator: Translator,
    out: Path,
    manifest: Manifest,
    direction: Direction,
    pair: tuple[str, str],
) -> Manifest:
    """Translates the direction's sources (language pair[0]) into pair[1] from its last
    chunk boundary on,
    a chunk at a time, each synced to the target file before the manifest records it."""
    source, target = out / direction.source, out / direction.target
    if change := _change(direction, source, target):
        raise UserError(
            f"{change}: the corpus was changed since it was written. Pass --overwrite to "
            "start afresh."
        )
    progress = ProgressLine(f"distilling {direction.name}", direction.lines - direction.translated)
    try:
        with source.open("rb") as sources, target.open("r+b") as sink:
            sink.truncate(direction.target_bytes)  # a chunk the manifest never recorded
            sink.seek(direction.target_bytes)
            rest = itertools.islice(sources, direction.translated, None)
            lines = (raw.decode("utf-8").removesuffix("\n") for raw in rest)
            while chunk := list(itertools.islice(lines, manifest.settings.chunk_lines)):
                found = translator.stream(
                    chunk, tgt_lang=pair[1], src_lang=pair[0], chunk=None, done=progress.advance
                )
                sink.write("".join(translation.text + "\n" for translation in found).encode())
                sink.flush()
                os.fsync(sink.fileno())
                direction = dataclasses.replace(
                    direction,
                    translated=direction.translated + len(chunk),
                    target_bytes=sink.tell(),
                )
                manifest = manifest.with_direction(direction)
                manifest.save(out)
    except OSError as error:
        raise unwritable(error, target) from None
    finally:
        progress.close()
    return manifest


def _change(direction: Direction, source: Path, target: Path) -> str | None:
    """How the direction's files differ from what the manifest says of them, if they do."""
    if not source.is_file():
        return f"{source} is missing"
    if not target.is_file():
        return f"{target} is missing"
    if target.stat().st_size < direction.target_bytes:
        return f"{target} holds fewer bytes than the {direction.target_bytes} {MANIFEST} counts"
    return None
