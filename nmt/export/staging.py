"""Writing an exported model directory all at once: a failed export leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nmt.errors import UserError


def check_output(output: Path, option: str = "--output") -> None:
    """A UserError unless `output` is new or an empty directory whose parent can be made;
    checked before any slow work."""
    if output.exists() and not (output.is_dir() and not any(output.iterdir())):
        raise UserError(f"{option} {output} already exists; remove it or choose a new directory.")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"{option} {output}: cannot create {output.parent} ({error}).") from None


@contextmanager
def staged(output: Path) -> Iterator[Path]:
    """A sibling temporary directory to write into, renamed to `output` when the block ends
    without an error and removed when it does not."""
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    try:
        yield staging
        if output.exists():
            output.rmdir()  # empty, as check_output found it
        os.replace(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
