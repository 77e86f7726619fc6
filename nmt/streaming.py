"""Input lines as they arrive, so `nmt translate` works as a REPL and inside shell pipelines.

A terminal gives one line per read; a busy pipe gives whatever it holds (up to CHUNK bytes), so
a pipeline still gets batches while each line waits at most for its own chunk. A regular file
redirected to stdin is read whole in one go, which batches best.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

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
