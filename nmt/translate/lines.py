"""Lines in, lines out: how `nmt translate` reads its input and writes its output.

Input comes as it arrives, so `nmt translate` works as a REPL and inside shell pipelines: a
terminal gives one line per read; a busy pipe gives whatever it holds (up to CHUNK bytes), so
a pipeline still gets batches while each line waits at most for its own chunk. A regular file
redirected to stdin is read whole in one go, which batches best.

Output is one line per input line, or `nbest` lines per input in the Moses n-best form
`INDEX ||| text ||| score`, optionally with ` ||| ` and a Pharaoh word alignment; attention
heatmaps go to a directory on the side.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from nmt.errors import UserError
from nmt.translate.translator import Translation, Translator

CHUNK = 1 << 16  # bytes per read from a pipe: a bound on how many lines wait for each other
BOM = b"\xef\xbb\xbf"


def line_batches(stream: BinaryIO) -> Iterator[list[str]]:
    """Yields the complete lines each read brings (UTF-8, line ends and a BOM removed)."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError):  # an in-memory stream (nmt embedded, tests): read it whole
        read, size = stream.read, -1
    else:
        status = os.fstat(descriptor)
        size = max(CHUNK, status.st_size + 1) if stat.S_ISREG(status.st_mode) else CHUNK
        read = functools.partial(os.read, descriptor)
    pending, first = b"", True
    while chunk := read(size):
        pending += chunk.removeprefix(BOM) if first else chunk
        first = False
        *complete, pending = pending.split(b"\n")
        if complete:
            yield [_decode(line) for line in complete]
    if pending:
        yield [_decode(pending)]


def _decode(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").removesuffix("\r")


def write_translations(
    translator: Translator,
    batches: Iterable[list[str]],
    sink: TextIO,
    alignments: bool = False,
    plot_dir: Path | None = None,
) -> None:
    """Translates each batch of lines and flushes its output before reading the next batch."""
    if plot_dir is not None:
        try:
            plot_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"--attention-plots {plot_dir}: cannot create it ({error}).") from None
    index = 0
    for lines in batches:
        translations = translator.translate(
            lines, alignments=alignments, attention=plot_dir is not None
        )
        for offset, translation in enumerate(translations):
            nbest = translator.decode.nbest
            for line in format_translation(index + offset, translation, nbest, alignments):
                sink.write(line + "\n")
        sink.flush()
        if plot_dir is not None:
            for offset, translation in enumerate(translations):
                plot_translation(index + offset, translation, plot_dir)
        index += len(translations)


def format_translation(
    index: int, translation: Translation, nbest: int, alignments: bool = False
) -> list[str]:
    """The output lines of one input: its text, or with `nbest` > 1 Moses n-best lines
    'INDEX ||| text ||| score'; with `alignments`, then ' ||| ' and the word alignment. A
    blank input gives blank text (nbest times, score 0)."""
    rows = [(c.text, c.score, c.alignment) for c in translation.nbest] or [("", 0.0, "")] * nbest
    lines = []
    for text, score, alignment in rows:
        fields = [str(index), text, f"{score:.4f}"] if nbest > 1 else [text]
        lines.append(" ||| ".join([*fields, alignment or ""] if alignments else fields))
    return lines


def plot_translation(index: int, translation: Translation, plot_dir: Path) -> None:
    """DIR/INDEX.png for the best translation of a non-blank input (INDEX as in n-best lists)."""
    attention = translation.attention
    if attention is None:
        return
    from nmt.plots import plot_attention

    plot_attention(
        attention.weights,
        attention.src_tokens,
        attention.tgt_tokens,
        plot_dir / f"{index:05d}.png",
        title=f"sentence {index}",
    )
