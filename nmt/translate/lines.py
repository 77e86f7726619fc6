"""Lines in, lines out: how `nmt translate` reads its input and writes its output.

A regular file (`--input FILE`, or one redirected to stdin) is read lazily and translated in
one call, a chunk of lines at a time (nmt/translate/pipeline.py): memory stays bounded
whatever its length, output appears chunk by chunk, and a progress line counts down on a
terminal. A pipe or a terminal is translated as it arrives, so `nmt translate` works as a
REPL and inside shell pipelines: each read gives whatever the pipe holds (up to CHUNK
bytes), and those lines are translated and written before the next read.

Output is one line per input line, or `nbest` lines per input in the Moses n-best form
`INDEX ||| text ||| score`, optionally with ` ||| ` and a Pharaoh word alignment; attention
heatmaps go to a directory on the side.
"""

from __future__ import annotations

import itertools
import logging
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from nmt.data.markup import MarkupKind
from nmt.errors import UserError
from nmt.reads import record
from nmt.terminal import ProgressLine
from nmt.translate.constraints import ConstraintError
from nmt.translate.markup import marked_stream
from nmt.translate.pipeline import CHUNK_LINES
from nmt.translate.results import Translation

log = logging.getLogger(__name__)

CHUNK = 1 << 16  # bytes per read from a pipe: a bound on how many lines wait for each other
BLOCK = 1 << 20  # bytes per read from a regular file
BOM = b"\xef\xbb\xbf"


class InputLines:
    """A binary stream's lines (UTF-8; line ends and a BOM removed) as groups, each group
    translated by one call: a regular file is one group, read lazily; a pipe or a terminal
    gives a group per read. `total`: a regular file's number of lines, else None. Bytes that
    are not UTF-8 are replaced, or for a file named by `name` a UserError naming the line."""

    def __init__(self, stream: BinaryIO, name: str | None = None):
        self.stream, self.name = stream, name
        try:
            self.descriptor: int | None = stream.fileno()
        except (OSError, ValueError):  # an in-memory stream (nmt embedded, tests)
            self.descriptor = None
        self.regular = self.descriptor is None or stat.S_ISREG(os.fstat(self.descriptor).st_mode)
        self.total = count_lines(stream) if self.regular and stream.seekable() else None

    def groups(self) -> Iterator[Iterable[str]]:
        if self.regular:
            lines = _by_read(_reads(self.stream.read, BLOCK), self.name)
            yield itertools.chain.from_iterable(lines)
        else:
            yield from _by_read(_reads(lambda size: os.read(self.descriptor, size), CHUNK))


class FileLines:
    """The lines of a file given beside the input (`--constraints`, `--prefix`, `--tgt`),
    read one at a time and parsed by `parse(line, number)`; `name` names it in errors and
    `total` is its number of lines. A context manager that closes the file."""

    def __init__(self, option: str, path: Path, parse: Callable[[str, int], Any]):
        try:
            self.stream = record(path, option).open("rb")
        except OSError as error:
            raise UserError(f"{option} {path}: cannot read it ({error.strerror}).") from None
        self.option, self.path, self.parse, self.count = option, path, parse, 0
        self.total = count_lines(self.stream)
        lines = _by_read(_reads(self.stream.read, BLOCK), str(path))
        self.lines = itertools.chain.from_iterable(lines)

    @property
    def name(self) -> str:
        return f"{self.option} {self.path} ({self.count} lines)"

    def __enter__(self) -> FileLines:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stream.close()

    def __iter__(self) -> FileLines:
        return self

    def __next__(self) -> Any:
        line = next(self.lines)
        self.count += 1
        return self.parse(line, self.count)

    def check_ended(self, lines: int) -> None:
        """A UserError unless the file ended with the input's `lines` lines."""
        if next(self.lines, None) is not None:
            raise UserError(
                f"{self.option} {self.path} has more lines than the input's {lines}; give one "
                "line per input line (a blank one for none)."
            )


def _reads(read: Callable[[int], bytes], size: int) -> Iterator[bytes]:
    return iter(lambda: read(size), b"")


def _by_read(reads: Iterable[bytes], name: str | None = None) -> Iterator[list[str]]:
    """The complete lines each read brings, a list per read (see InputLines for `name`)."""
    pending, first, number = b"", True, 0
    for chunk in reads:
        pending += chunk.removeprefix(BOM) if first else chunk
        first = False
        *complete, pending = pending.split(b"\n")
        if complete:
            yield [_decode(line, name, number + i) for i, line in enumerate(complete, 1)]
            number += len(complete)
    if pending:
        yield [_decode(pending, name, number + 1)]


def _decode(line: bytes, name: str | None, number: int) -> str:
    try:
        text = line.decode("utf-8", errors="strict" if name else "replace")
    except UnicodeDecodeError as error:
        raise UserError(
            f"{name} is not valid UTF-8: line {number}, byte {error.start + 1} of the line "
            f"({error.reason}). Convert the file to UTF-8 (e.g. with iconv)."
        ) from None
    return text.removesuffix("\r")


def count_lines(stream: BinaryIO) -> int:
    """The lines from the stream's position on, which it is left at."""
    start, count, last = stream.tell(), 0, b"\n"
    while block := stream.read(BLOCK):
        count, last = count + block.count(b"\n"), block[-1:]
    stream.seek(start)
    return count + (last != b"\n")


def write_translations(
    translator: Any,
    source: InputLines,
    sink: TextIO,
    alignments: bool = False,
    plot_dir: Path | None = None,
    constraints: FileLines | None = None,
    prefixes: FileLines | None = None,
    chunk: int | None = CHUNK_LINES,
    src_lang: str | None = None,
    markup: MarkupKind | None = None,
    keep: Sequence[str] = (),
    placement: str | None = None,
) -> None:
    """Translates the input group by group (see InputLines), `chunk` lines at a time, and
    writes each translation as it comes. `constraints` and `prefixes` hold one entry per
    input line (--constraints, --prefix); translations that miss their constraints (the
    length limit left no room) are counted in a warning on stderr. `markup`: each line is
    HTML or XML, translated sentence by sentence with its tags kept, and what `keep`'s
    patterns match (besides nmt/data/markup's PLACEHOLDERS) copied untouched."""
    if plot_dir is not None:
        try:
            plot_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"--attention-plots {plot_dir}: cannot create it ({error}).") from None
    progress = ProgressLine("translating", source.total)
    if markup is not None:  # a marked-up line has one translation, whatever decode.nbest says
        translator = translator.with_decode(nbest=1)
    index, missed, nbest = 0, [], translator.decode.nbest
    try:
        for group in source.groups():
            if markup is not None:
                translations = marked_stream(
                    translator, group, markup, chunk=chunk, done=progress.advance, first=index,
                    src_lang=src_lang, keep=keep, placement=placement,
                )  # fmt: skip
            else:
                translations = translator.stream(
                    group,
                    alignments=alignments,
                    attention=plot_dir is not None,
                    constraints=constraints,
                    prefix=prefixes,
                    chunk=chunk,
                    done=progress.advance,
                    first=index,
                    src_lang=src_lang,
                )
            try:
                for translation in translations:
                    for line in format_translation(index, translation, nbest, alignments):
                        sink.write(line + "\n")
                    if not source.regular:  # a REPL or a pipeline waits for each line
                        sink.flush()
                    if plot_dir is not None:
                        plot_translation(index, translation, plot_dir)
                    if translation.constraints_met is False:
                        missed.append(index)
                    index += 1
            except ConstraintError as error:
                if error.index is None:
                    raise
                line = error.index + 1
                raise UserError(f"input line {line}, {error.field}: {error.detail}.") from None
    finally:
        progress.close()
        sink.flush()
    for given in (constraints, prefixes):
        if given is not None:
            given.check_ended(index)
    if missed:
        log.warning(
            "warning: %d translation(s) miss some of their constraints, the length limit "
            "leaving no room for them (first: line %d); raise --max-len-extra.",
            len(missed),
            missed[0] + 1,
        )


def format_translation(
    index: int, translation: Translation, nbest: int, alignments: bool = False
) -> list[str]:
    """The output lines of one input: its text, or with `nbest` > 1 Moses n-best lines
    'INDEX ||| text ||| score' (as many as the search found); with `alignments`, then
    ' ||| ' and the word alignment. A blank input gives blank text (nbest times, score 0)."""
    rows = [(c.text, c.score, c.alignment) for c in translation.nbest] or [("", 0.0, "")] * nbest
    lines = []
    for text, score, alignment in rows:
        fields = [str(index), text, f"{score:.4f}"] if nbest > 1 else [text]
        lines.append(" ||| ".join([*fields, alignment or ""] if alignments else fields))
    return lines


def plot_translation(index: int, translation: Translation, plot_dir: Path) -> None:
    """DIR/INDEX.png for the best translation of a non-blank input (INDEX as in n-best
    lists); through a pivot, that of its second leg, and DIR/INDEX.pivot.png of its first."""
    from nmt.plots import plot_attention

    via = translation.pivot
    maps = [(translation.attention, f"{index:05d}.png", f"sentence {index}")]
    if via is not None:
        maps.append((via.attention, f"{index:05d}.pivot.png", f"sentence {index}, into the pivot"))
    for attention, name, title in maps:
        if attention is not None:
            weights, src, tgt = attention.weights, attention.src_tokens, attention.tgt_tokens
            plot_attention(weights, src, tgt, plot_dir / name, title=title)
