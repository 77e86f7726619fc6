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
import logging
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from nmt.errors import UserError
from nmt.translate.constraints import ConstraintError, TextConstraints
from nmt.translate.translator import Translation, Translator

log = logging.getLogger(__name__)

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
    constraints: Sequence[TextConstraints | None] | None = None,
    prefixes: Sequence[str | None] | None = None,
) -> None:
    """Translates each batch of lines and flushes its output before reading the next batch.
    `constraints` and `prefixes` hold one entry per input line (--constraints, --prefix);
    translations that miss their constraints (the length limit left no room) are counted
    in a warning on stderr."""
    given = constraints if constraints is not None else prefixes
    if plot_dir is not None:
        try:
            plot_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"--attention-plots {plot_dir}: cannot create it ({error}).") from None
    index, missed = 0, []
    for lines in batches:
        if given is not None and index + len(lines) > len(given):
            raise UserError(_count_mismatch(len(given), f"more than {len(given)}"))
        span = slice(index, index + len(lines))
        try:
            translations = translator.translate(
                lines,
                alignments=alignments,
                attention=plot_dir is not None,
                **({"constraints": constraints[span]} if constraints is not None else {}),
                **({"prefix": prefixes[span]} if prefixes is not None else {}),
            )
        except ConstraintError as error:
            if error.index is None:
                raise
            line = index + error.index + 1
            raise UserError(f"input line {line}, {error.field}: {error.detail}.") from None
        missed += [index + i for i, t in enumerate(translations) if t.constraints_met is False]
        for offset, translation in enumerate(translations):
            nbest = translator.decode.nbest
            for line in format_translation(index + offset, translation, nbest, alignments):
                sink.write(line + "\n")
        sink.flush()
        if plot_dir is not None:
            for offset, translation in enumerate(translations):
                plot_translation(index + offset, translation, plot_dir)
        index += len(translations)
    if given is not None and index < len(given):
        raise UserError(_count_mismatch(len(given), str(index)))
    if missed:
        log.warning(
            "warning: %d translation(s) miss some of their constraints, the length limit "
            "leaving no room for them (first: line %d); raise decode.max_len_extra.",
            len(missed),
            missed[0] + 1,
        )


def _count_mismatch(expected: int, found: str) -> str:
    return (
        f"the input has {found} lines, but --constraints/--prefix gave {expected}; give one "
        "line per input line (a blank one for none)."
    )


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
