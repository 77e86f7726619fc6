"""The files a command reads, recorded where they are opened.

A command's outputs are checked against every file it reads (nmt/outputs.py), not against a
list each command keeps by hand: a file opened anywhere below the command (a chained model,
a shortlist, an exported model's weights, a corpus split) is recorded by the one opener
here, so writing over it is refused before it is replaced. Outside a command (`recording`
not entered, as in the Python API) nothing is recorded.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from nmt.errors import UserError


@dataclass(frozen=True)
class Read:
    """A file (or a directory read whole) and what named it: an option (`--then`) or, for
    a file found through another, what it is (`the shortlist of runs/demo/best.pt`)."""

    named_by: str
    path: Path

    @property
    def description(self) -> str:
        """`the file --then reads` (an option or an argument: PATH), or what it is where no
        option named it."""
        option = self.named_by.startswith("-") or self.named_by.isupper()
        return f"the file {self.named_by} reads" if option else self.named_by


_lock = threading.Lock()
_scopes: list[list[Read]] = []  # one per command being run; reads go to the innermost


@contextlib.contextmanager
def recording() -> Iterator[list[Read]]:
    """Records the reads of the block (of every thread: a command's workers read for it)."""
    reads: list[Read] = []
    with _lock:
        _scopes.append(reads)
    try:
        yield reads
    finally:
        with _lock:
            _scopes.remove(reads)


def record(path: Path | str, named_by: str) -> Path:
    """Notes that the command reads `path` (a file, or a directory it reads whole)."""
    path = Path(path)
    with _lock:
        if _scopes:
            _scopes[-1].append(Read(named_by, path))
    return path


def record_directory(directory: Path | str, named_by: str) -> Path:
    """Notes that the command reads `directory` and each file in it (an exported model, a
    tokenizer's files): writing one of them, or replacing the directory, is refused."""
    directory = record(directory, named_by)
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            if path.is_file():
                record(path, named_by)
    return directory


def recorded() -> list[Read]:
    """What the command being run has read so far."""
    with _lock:
        return list(_scopes[-1]) if _scopes else []


def open_read(path: Path | str, named_by: str) -> IO[bytes]:
    """`path` opened to read as bytes and recorded; a UserError naming it where it cannot be."""
    path = record(path, named_by)
    try:
        return path.open("rb")
    except OSError as error:
        raise UserError(
            f"cannot read {named_by} {path}: {error.strerror or error}. Check the path."
        ) from None


def read_bytes(path: Path | str, named_by: str) -> bytes:
    with open_read(path, named_by) as handle:
        return handle.read()


def read_text(path: Path | str, named_by: str) -> str:
    """The file's text, UTF-8 (errors as the decoder raises them)."""
    return read_bytes(path, named_by).decode("utf-8")
