"""Files a command writes: never over one of its own inputs, never half-written.

A command that reads `f` and writes `f` would truncate its input before reading it, so an
output that is the same file as an input (the same inode, or a path that resolves to it) is
refused before anything is opened for writing, and checked again before it is replaced:
against the inputs a command names and every file it has read (nmt/reads.py records each
where it is opened). A directory a command replaces never contains an input, nor lies
inside one. Output goes to a temporary file beside its destination (a symlink's target),
renamed over it only once complete: a crash, an error or Ctrl-C midway leaves the file that
stood there before (or none), never a torn one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from nmt.errors import UserError
from nmt.reads import Read, recorded

TEMPORARY_SUFFIX = ".tmp"  # a write killed midway leaves .NAME.XXXX.tmp

# (the option that names a file, the file it reads; None: not given)
Inputs = Iterable[tuple[str, "Path | str | None"]]


def check_output(
    output: Path, option: str, inputs: Inputs | None = None, stdin: bool = False
) -> None:
    """A UserError unless `output` (given as `option`) can be written: its directory exists,
    it is no directory itself, and it is none of `inputs`, of the files read so far (nor
    standard input, with `stdin`, where stdin is a file)."""
    if output.is_dir():
        raise UserError(f"{option} {output} is a directory; give the path of a file to write.")
    destination = _destination(output, option) or output
    if not destination.parent.is_dir():
        raise UserError(
            f"{option} {output}: directory {destination.parent} does not exist. Create it first."
        )
    read = [Read(name, Path(path)) for name, path in inputs or () if path is not None]
    for given in [*read, *recorded()]:
        if same_file(output, given.path):
            raise UserError(
                f"{option} {output} is {given.description} ({given.path}): writing "
                "it would destroy the input before it is read. Write to another file (and move "
                "it afterwards, if you want it there)."
            )
    if stdin and _is_stdin(output):
        raise UserError(
            f"{option} {output} is the file standard input reads: writing it would destroy the "
            "input before it is read. Write to another file (and move it afterwards)."
        )


def check_output_directory(output: Path, option: str, inputs: Inputs | None = None) -> None:
    """A UserError where the directory `output`, which a command creates or replaces whole,
    is, holds or lies inside one of `inputs` or of the files and directories read so far."""
    read = [Read(name, Path(path)) for name, path in inputs or () if path is not None]
    replaced = output.resolve()
    for given in [*read, *recorded()]:
        path = given.path.resolve()
        if path == replaced or replaced in path.parents or path in replaced.parents:
            where = "is" if path == replaced else "holds" if replaced in path.parents else "is in"
            raise UserError(
                f"{option} {output} {where} {given.description} ({given.path}): writing the "
                "directory there would destroy an input. Choose a directory outside the "
                "input's, and not around it."
            )


def same_file(first: Path, second: Path) -> bool:
    """Whether the two paths name one file: the same inode where both exist, else the same
    resolved path (a link to a file yet to be written)."""
    try:
        return os.path.samefile(first, second)
    except OSError:
        return first.resolve() == second.resolve()


def _is_stdin(output: Path) -> bool:
    try:
        given, read = os.stat(output), os.fstat(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError):  # no such file, or stdin is no descriptor
        return False
    return stat.S_ISREG(read.st_mode) and (given.st_dev, given.st_ino) == (read.st_dev, read.st_ino)


def _destination(path: Path, option: str) -> Path | None:
    """The file that writing `path` replaces: a symlink's final target (the link stays a
    link), or None where it is no file to replace but one to write into: a device, a FIFO,
    or what /dev and /proc name (/dev/stdout links to /proc/self/fd/1, the process's own
    output, which a rename would replace for everyone)."""
    for _ in range(40):  # the kernel's own limit on a chain of links
        if _special(path):
            return None
        if not path.is_symlink():
            return None if path.exists() and not path.is_file() else path
        target = Path(os.readlink(path))
        path = target if target.is_absolute() else path.parent / target
    raise UserError(f"{option} {path}: too many levels of symbolic links; give the file itself.")


def _special(path: Path) -> bool:
    return path.absolute().parts[1:2] in (("dev",), ("proc",))


@contextlib.contextmanager
def replacing(path: Path, option: str = "--output") -> Iterator[TextIO]:
    """A text handle whose lines replace `path` when the block ends without an error; until
    then they go to a temporary file beside it (beside a symlink's target, which they
    replace), removed if the block fails. A path that is no regular file (/dev/stdout, a
    device, a named pipe) is written directly, as it is no file to replace. Before the
    rename, `path` is checked once more against every file the command read meanwhile."""
    destination = _destination(path, option)
    if destination is None:
        with _opened(path, option) as handle:
            yield handle
        return
    handle = _temporary(destination, option)
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        check_output(path, option)
        _keep_mode(destination, Path(handle.name))
        os.replace(handle.name, destination)
    except OSError as error:
        Path(handle.name).unlink(missing_ok=True)
        raise _unwritable(path, option, error) from None
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def write_output(path: Path, data: bytes | memoryview, option: str = "--output") -> None:
    """Writes a file a command was asked for (`option`): checked against every file the
    command read, then written atomically (through a symlink to its target)."""
    check_output(path, option)
    try:
        write_atomically(path, data)
    except OSError as error:
        raise _unwritable(path, option, error) from None


def write_atomically(path: Path, data: bytes | memoryview) -> None:
    """Replaces `path` by `data` through a temporary file, fsync and rename, so a reader (or
    a crash) sees the old file or the new one, never a torn one; OSError as the OS says. A
    symlink is written through: its target is replaced, the link kept. What is no file to
    replace (a device, a FIFO, /dev/stdout) is written into, as `replacing` does."""
    destination = _destination(path, "the file")
    if destination is None:
        with path.open("wb") as stream:
            stream.write(data)
        return
    path = destination
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, renamed only if complete
        dir=path.parent, prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX, delete=False
    )
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _temporary(path: Path, option: str) -> TextIO:
    try:
        return tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by replacing()
            "w",
            encoding="utf-8",
            dir=path.parent,
            prefix=f".{path.name}.",
            suffix=TEMPORARY_SUFFIX,
            delete=False,
        )
    except OSError as error:
        raise _unwritable(path, option, error) from None


@contextlib.contextmanager
def _opened(path: Path, option: str) -> Iterator[TextIO]:
    try:
        handle = path.open("w", encoding="utf-8")
    except OSError as error:
        raise _unwritable(path, option, error) from None
    with handle:
        yield handle


def _keep_mode(path: Path, temporary: Path) -> None:
    """The new file gets the old one's permissions, or a new file's (the umask's), where
    the temporary file has only its owner's."""
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(temporary, mode)


def _unwritable(path: Path, option: str, error: OSError) -> UserError:
    return UserError(
        f"cannot write {option} {path}: {error.strerror or error}. Nothing was written there "
        "(a file that stood there before is unchanged); free disk space or make the "
        "directory writable, then run the command again."
    )


def check_new_directory(output: Path, option: str = "--output") -> None:
    """A UserError unless `output` is new or an empty directory whose parent can be made
    (for a symlink: its target's); checked before any slow work."""
    if output.exists() and not (output.is_dir() and not any(output.iterdir())):
        raise UserError(f"{option} {output} already exists; remove it or choose a new directory.")
    try:
        output.resolve().parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"{option} {output}: cannot create {output.parent} ({error}).") from None


@contextlib.contextmanager
def staged(output: Path, option: str) -> Iterator[Path]:
    """A sibling temporary directory to write a whole directory into, renamed to `output`
    (replacing it, if it exists) when the block ends without an error and removed when it
    does not; one that a killed earlier write left behind is removed first. `output` is
    checked against every input read before it is replaced (check_output_directory). A
    symlink is written through: the directory it names is the one replaced, the link kept."""
    check_output_directory(output, option)
    output = output.resolve()
    prefix = f".{output.name}.partial-"
    for leftover in output.parent.glob(f"{prefix}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=prefix, dir=output.parent))
    try:
        yield staging
        check_output_directory(output, option)
        if output.exists():
            shutil.rmtree(output)
        os.replace(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
