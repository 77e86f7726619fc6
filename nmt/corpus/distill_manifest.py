"""`manifest.json`, what a distilled corpus says about itself: who translated it and how
(the settings a resume must repeat), its files, how far each direction has got, and
whether it is complete.

It is replaced atomically after every chunk, once that chunk's translations are on disk,
so it never claims more than the target files hold; they may hold more (a chunk written
when the process died before the manifest was), which a resume cuts off.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmt.config import config_differences
from nmt.errors import UserError
from nmt.outputs import TEMPORARY_SUFFIX, write_atomically
from nmt.version import __version__

MANIFEST = "manifest.json"
FORMAT = 1


@dataclass(frozen=True)
class Teacher:
    path: str  # the checkpoint file (a run directory's best.pt)
    sha256: str  # of its bytes: what a resume compares, wherever the file has moved


@dataclass(frozen=True)
class Settings:
    """Everything the translations depend on: a resume must give the same."""

    teachers: tuple[Teacher, ...]
    decode: dict[str, Any]  # the DecodeConfig searched with
    quantize: str | None
    device: str  # cpu or cuda: their float arithmetic differs in the last bits
    chunk_lines: int  # a chunk's lines are sorted into batches together
    corpus: str  # where the train split was read
    shortlist: str | None = None  # sha256 of the shortlist file decode.shortlist K reads

    def differences(self, given: Settings) -> list[str]:
        """What differs between these settings (a manifest's) and `given` (a command's)."""
        found = []
        if [t.sha256 for t in self.teachers] != [t.sha256 for t in given.teachers]:
            found.append(f"teachers: {_named(self.teachers)} -> {_named(given.teachers)}")
        mine, theirs = dataclasses.asdict(self), dataclasses.asdict(given)
        del mine["teachers"], theirs["teachers"]
        return found + config_differences(mine, theirs)


def _named(teachers: tuple[Teacher, ...]) -> str:
    return ", ".join(f"{t.path} (sha256 {t.sha256[:12]})" for t in teachers)


@dataclass(frozen=True)
class Direction:
    """One direction's pair of train files, and how far its translation has got."""

    name: str  # "de-en"
    source: str  # file names in the corpus directory
    target: str
    lines: int | None = None  # the source's lines, once it is written in full
    translated: int = 0  # sources translated, at a chunk boundary
    target_bytes: int = 0  # the target file's length after their translations

    @property
    def done(self) -> bool:
        return self.lines is not None and self.translated == self.lines


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """What manifest.json holds, in this order: read from the top, it says what it is."""

    format: int = FORMAT
    nmt_version: str = __version__
    complete: bool = False
    settings: Settings
    directions: tuple[Direction, ...]
    copied: tuple[str, ...] = ()  # the valid and test files, once copied

    @property
    def files(self) -> list[str]:
        """The files this corpus's distillation writes, the manifest last."""
        pairs = [name for d in self.directions for name in (d.source, d.target)]
        return [*pairs, *self.copied, MANIFEST]

    def with_direction(self, direction: Direction) -> Manifest:
        directions = tuple(direction if d.name == direction.name else d for d in self.directions)
        return dataclasses.replace(self, directions=directions)

    def save(self, directory: Path) -> None:
        text = json.dumps(dataclasses.asdict(self), indent=2, ensure_ascii=False) + "\n"
        try:
            write_atomically(directory / MANIFEST, text.encode("utf-8"))
        except OSError as error:
            raise unwritable(error, directory / MANIFEST) from None


def unwritable(error: OSError, path: Path) -> UserError:
    """What to do when a file of the corpus cannot be written."""
    return UserError(
        f"cannot write {error.filename or path}: {error.strerror or error}. Free disk space or "
        "fix the directory's permissions, then run the same command again to finish."
    )


def read_manifest(directory: Path) -> Manifest | None:
    """The manifest of the distilled corpus in `directory`; None when it has none."""
    path = directory / MANIFEST
    for leftover in directory.glob(f".{MANIFEST}.*{TEMPORARY_SUFFIX}"):
        leftover.unlink(missing_ok=True)  # a save killed midway
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text("utf-8"))
        if raw["format"] > FORMAT:
            raise UserError(
                f"{path} has format {raw['format']}, newer than this nmt reads ({FORMAT}). "
                "Upgrade nmt to finish it."
            )
        settings = dict(raw["settings"])
        settings["teachers"] = tuple(Teacher(**t) for t in settings["teachers"])
        return Manifest(
            format=raw["format"],
            nmt_version=raw["nmt_version"],
            complete=raw["complete"],
            settings=Settings(**settings),
            directions=tuple(Direction(**d) for d in raw["directions"]),
            copied=tuple(raw["copied"]),
        )
    except (ValueError, KeyError, TypeError):
        raise UserError(
            f"{path} is not a manifest nmt distill wrote (or it was edited); choose another "
            "--out, or remove the directory."
        ) from None
