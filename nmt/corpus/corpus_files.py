"""The files of a distilled corpus, laid out as training reads any local corpus
(nmt/data/splits.py): each direction's train pair, and the corpus's valid and test splits.

One direction writes `{train}.{src}` (the sources) and `{train}.{tgt}` (the teacher's
translations). Several write a pair of their own each, `{train}.{src}-{tgt}.{src}` and
`{train}.{src}-{tgt}.{tgt}`: their targets cannot share a file, since de-en's English
translates the German sources and cs-en's the Czech ones (and en-de's German targets are not
de-en's German sources), so a multi-way corpus becomes one corpus per direction, each pair
aligned line by line. Valid and test keep their shared `{split}.{lang}` files, references
as they were.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from nmt.config import DataConfig
from nmt.corpus.distill_manifest import Direction
from nmt.data.directions import direction_name
from nmt.data.splits import load_split, locate, read_pairs
from nmt.errors import UserError


def corpus_config(teacher: DataConfig, directory: Path | None) -> DataConfig:
    """The corpus to distil: the teacher's own (data.path, the demo, the hub), or the local
    `directory`; its train split without data.extra_train, which may be distilled already."""
    if directory is not None and not directory.is_dir():
        problem = "is not a directory" if directory.exists() else "does not exist"
        raise UserError(
            f"--data {directory} {problem}. Point it at the corpus directory (train, valid "
            "and test files), or leave it out to distil the teacher's own corpus."
        )
    path = teacher.path if directory is None else str(directory)
    return dataclasses.replace(teacher, path=path, extra_train=None)


def corpus_name(data: DataConfig) -> str:
    """Where the train split is read: a directory (resolved), or a hub dataset."""
    location = locate(data.direction(*data.pairs[0]), "train")
    if location.kind == "hub":
        return f"hub {data.hub_id}" + (f" ({data.hub_config})" if data.hub_config else "")
    return str(location.files[0].parent.resolve())


def planned_directions(data: DataConfig) -> tuple[Direction, ...]:
    """Each direction's train files, nothing written yet (see the module's docstring)."""
    split = data.splits.train
    if len(data.pairs) == 1:
        ((source, target),) = data.pairs
        return (
            Direction(direction_name(source, target), f"{split}.{source}", f"{split}.{target}"),
        )
    return tuple(
        Direction(name, f"{split}.{name}.{source}", f"{split}.{name}.{target}")
        for source, target in data.pairs
        for name in [direction_name(source, target)]
    )


def write_sources(data: DataConfig, pair: tuple[str, str], path: Path) -> int:
    """Writes the train sources of direction `pair` to `path`, one a line as read (none
    dropped, blank ones kept blank), read a pair at a time; returns how many."""
    count = 0
    with path.open("wb") as sink:
        for source, _ in read_pairs(data.direction(*pair)):
            sink.write(_one_line(source).encode("utf-8") + b"\n")
            count += 1
        _sync(sink)
    return count


def copy_splits(data: DataConfig, directory: Path) -> tuple[str, ...]:
    """Copies the valid and test splits of every direction into `directory`: text files
    byte for byte under their own names, a table's or a hub dataset's as `{split}.{lang}`
    text files. Returns the names written."""
    written: set[str] = set()
    for role in ("valid", "test"):
        split = getattr(data.splits, role)
        if split is None:
            continue
        for pair in data.pairs:
            one = data.direction(*pair)
            location = locate(one, role)
            if location.kind == "text":
                for file in location.files:
                    shutil.copyfile(file, directory / file.name)
                    written.add(file.name)
                continue
            text = load_split(one, role)
            for language, lines in zip(pair, (text.src, text.tgt), strict=True):
                _write_lines(directory / f"{split}.{language}", lines)
                written.add(f"{split}.{language}")
    for name in written:
        with (directory / name).open("rb+") as copied:
            _sync(copied)
    return tuple(sorted(written))


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    with path.open("wb") as sink:
        for line in lines:
            sink.write(_one_line(line).encode("utf-8") + b"\n")


def _one_line(text: str) -> str:
    """A table's or hub's sentence may hold a line break, which a line of text cannot."""
    return text.replace("\n", " ")


def _sync(handle) -> None:
    """On disk before the manifest says it is there."""
    handle.flush()
    os.fsync(handle.fileno())
