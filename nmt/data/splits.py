"""Where a split's sentence pairs are, and reading them: all at once, or one pair at a time.

Corpora come from the Hugging Face hub (`data.hub_id`), a local directory (`data.path`)
of `{split}.{lang}` text files or `{split}.tsv|jsonl|parquet` files, or the generated
demo corpus. A direction's own pair of files, `{split}.{src}-{tgt}.{src}` and
`{split}.{src}-{tgt}.{tgt}`, wins over the shared `{split}.{lang}` files: a corpus whose
directions disagree about a language's side (the targets `nmt distill` writes for each
direction of a multilingual teacher) holds one pair per direction. `locate` finds a split
(with the error a user needs when it is not there); `load_split` reads it whole into two
aligned lists of strings, `read_pairs` streams it. Any way in which the two sides could
silently misalign is an error instead.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import islice, zip_longest
from pathlib import Path
from typing import BinaryIO

from nmt.config import DataConfig
from nmt.errors import UserError
from nmt.reads import record

log = logging.getLogger(__name__)

ROLES = ("train", "valid", "test")
TABLE_FORMATS = {"tsv": "csv", "jsonl": "json", "parquet": "parquet"}


@dataclass
class ParallelText:
    """Aligned sentence pairs of one split; `origin` says where they came from, for messages,
    and `files` which local files hold them (none for a hub split), so that no command
    writes over them."""

    src: list[str]
    tgt: list[str]
    origin: str
    files: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Location:
    """Where the pairs of one split are: two text files, one table file, or a hub split."""

    kind: str  # "text", "table" or "hub"
    files: tuple[Path, ...] = ()
    builder: str = ""
    split: str = ""

    def describe(self) -> tuple:
        stats = [(str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in self.files]
        return (self.kind, self.builder, self.split, stats)


def cache_dir(config: DataConfig) -> Path:
    default = os.environ.get("NMT_CACHE") or Path.home() / ".cache" / "nmt"
    return Path(config.cache_dir or default)


def load_split(config: DataConfig, role: str) -> ParallelText:
    """Reads the split that plays `role` (train, valid or test) from wherever the config says."""
    return _read(locate(config, role), config, role)


def load_train_split(config: DataConfig) -> ParallelText:
    """The train split that training reads: the corpus's own pairs, then those of each
    `data.extra_train` directory, in the order listed."""
    texts = [load_split(config, "train")]
    for index, directory in enumerate(config.extra_train or ()):
        key = f"data.extra_train[{index}]"
        texts.append(
            _read(_locate_local(Path(directory), config.splits.train, config, key), config)
        )
    if len(texts) == 1:
        return texts[0]
    return ParallelText(
        [line for text in texts for line in text.src],
        [line for text in texts for line in text.tgt],
        " + ".join(text.origin for text in texts),
    )


def _read(location: Location, config: DataConfig, role: str = "train") -> ParallelText:
    if location.kind == "text":
        text = _read_text_pair(*location.files)
    elif location.kind == "table":
        text = _read_table(location.files[0], location.builder, config)
    else:
        text = _read_hub(config, location.split, getattr(config.splits, role))
    if not text.src:
        raise UserError(f"{text.origin}: the {role} split has no sentence pairs.")
    return replace(text, files=location.files)


def locate(config: DataConfig, role: str = "train") -> Location:
    """Finds the split that plays `role`; every way of reading a split starts here, so its
    files are recorded as the command's inputs here (nmt/reads.py)."""
    split = getattr(config.splits, role)
    if config.path or config.demo:
        if config.path:
            location = _locate_local(Path(config.path), split, config)
        else:
            from nmt.data.demo import DEMO_VERSION, write_demo_corpus

            directory = write_demo_corpus(cache_dir(config) / "demo" / f"v{DEMO_VERSION}")
            location = _locate_local(directory, split, config)
        for file in location.files:
            record(file, f"the corpus's {role} split")
        return location
    if config.hub_id:
        return Location("hub", split=getattr(config.hub_splits or config.splits, role))
    raise UserError(
        "config key 'data': no corpus given. Set data.path to a directory of parallel files, "
        "data.hub_id to a Hugging Face dataset, or data.demo: true for the built-in demo corpus."
    )


def _locate_local(
    directory: Path, split: str, config: DataConfig, key: str = "data.path"
) -> Location:
    """The split's files in `directory` (named by config `key` in errors): the direction's
    own pair, the shared language files, or a table."""
    if not directory.is_dir():
        problem = "is not a directory" if directory.exists() else "does not exist"
        raise UserError(
            f"{key} {directory} {problem}. Point it at the folder that "
            f"holds {split}.{config.src_lang} and {split}.{config.tgt_lang}."
        )
    source, target = config.src_lang, config.tgt_lang
    for stem in (f"{split}.{source}-{target}", split):
        src_file, tgt_file = directory / f"{stem}.{source}", directory / f"{stem}.{target}"
        if src_file.exists() and tgt_file.exists():
            _require_content(src_file, tgt_file)
            return Location("text", (src_file, tgt_file))
    for suffix, builder in TABLE_FORMATS.items():
        table = directory / f"{split}.{suffix}"
        if table.exists():
            _require_content(table)
            return Location("table", (table,), builder)
    found = ", ".join(sorted(p.name for p in directory.iterdir())[:12]) or "nothing"
    raise UserError(
        f"{key} {directory}: no files for split '{split}'. Expected {src_file.name} and "
        f"{tgt_file.name}, or {split}.tsv / {split}.jsonl / {split}.parquet; found: {found}. "
        "Check data.splits, data.src_lang and data.tgt_lang."
    )


def _require_content(*files: Path) -> None:
    """An empty file would surface later as a puzzling error about a split or a count."""
    empty = [str(file) for file in files if file.stat().st_size == 0]
    if empty:
        raise UserError(
            f"{' and '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty. "
            "Put one sentence a line in it, or point data.path / data.splits elsewhere."
        )


def split_files(data: DataConfig) -> list[tuple[str, Path]]:
    """Every local file of the corpus's splits (each direction's train, valid and test),
    with what it is: what a command writing a directory must not replace."""
    return [
        (f"the corpus's {role} split", file)
        for pair in data.pairs
        for role in ("train", "valid", "test")
        if getattr(data.splits, role) is not None
        for file in locate(data.direction(*pair), role).files
    ]


def read_lines(path: Path, named_by: str = "a text file") -> list[str]:
    """UTF-8 lines without line ends; a BOM and CRLF endings are accepted silently."""
    try:
        data = record(path, named_by).read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}.") from None
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as error:
        raise _not_utf8(path, data, bom + error.start, error) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _read_text_pair(src_file: Path, tgt_file: Path) -> ParallelText:
    src, tgt = read_lines(src_file, "a corpus file"), read_lines(tgt_file, "a corpus file")
    if len(src) != len(tgt):
        raise UserError(
            f"parallel files differ in length: {src_file} has {len(src)} lines but {tgt_file} "
            f"has {len(tgt)}. Every line of one must translate the same line of the other."
        )
    return ParallelText(src, tgt, f"{src_file} / {tgt_file.name}")


def _read_table(table: Path, builder: str, config: DataConfig) -> ParallelText:
    import datasets

    try:
        dataset = datasets.load_dataset(
            builder, data_files=str(table), split="train", **_table_options(builder, config)
        )
    except Exception as error:  # the builders raise many types; all mean "unreadable file"
        raise UserError(f"cannot read {table} as {table.suffix[1:]}: {error}") from None
    return _columns(dataset, config, str(table))


def _table_options(builder: str, config: DataConfig) -> dict:
    """A .tsv is two tab-separated columns, no header, no quoting, nothing read as missing."""
    if builder != "csv":
        return {}
    return dict(
        delimiter="\t",
        column_names=[config.src_lang, config.tgt_lang],
        quoting=3,
        keep_default_na=False,
    )


def _read_hub(config: DataConfig, split: str, local: str) -> ParallelText:
    """The hub's `split`; `local`: the same split's name among files (data.splits), which
    the advice for an offline machine names."""
    _go_offline_unless_hub_reachable()
    import datasets

    name = config.hub_id + (f" ({config.hub_config})" if config.hub_config else "")
    try:
        dataset = datasets.load_dataset(config.hub_id, config.hub_config, split=split)
    except ValueError as error:
        raise UserError(f"data.hub_id {name}: {error}. Check data.splits.") from None
    except Exception as error:  # offline, unknown id, or a hub error: all need the same advice
        raise UserError(
            f"cannot load data.hub_id {name}, split '{split}', from the Hugging Face hub "
            f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}). "
            "Without internet access, download the corpus and set data.path to a directory with "
            f"{local}.{config.src_lang} and {local}.{config.tgt_lang} (data.splits names the "
            "files)."
        ) from None
    return _columns(dataset, config, f"{name}, split '{split}'")


def _go_offline_unless_hub_reachable(timeout: float = 3.0) -> None:
    """Without a route to the hub, `datasets` would retry for ~25 s before failing; offline
    mode fails at once, or loads the dataset from the local cache if it was downloaded before."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
    except OSError:
        log.info("the Hugging Face hub is unreachable: using only locally cached datasets")
        os.environ["HF_HUB_OFFLINE"] = "1"
        for module_name, attribute in (
            ("datasets.config", "HF_HUB_OFFLINE"),
            ("huggingface_hub.constants", "HF_HUB_OFFLINE"),
        ):
            module = sys.modules.get(module_name)
            if module is not None:
                setattr(module, attribute, True)


def _columns(dataset, config: DataConfig, origin: str) -> ParallelText:
    """Takes the two language columns, or a WMT-style `translation` dict column."""
    columns = dataset.column_names
    if config.src_lang in columns and config.tgt_lang in columns:
        src, tgt = list(dataset[config.src_lang]), list(dataset[config.tgt_lang])
    elif "translation" in columns:
        pairs = list(dataset["translation"])
        missing = [
            lang for lang in (config.src_lang, config.tgt_lang) if pairs and lang not in pairs[0]
        ]
        if missing:
            found = ", ".join(sorted(pairs[0]))
            raise UserError(
                f"{origin}: the translation column has no '{missing[0]}' entry "
                f"(languages found: {found}). Set data.src_lang / data.tgt_lang."
            )
        src = [pair[config.src_lang] for pair in pairs]
        tgt = [pair[config.tgt_lang] for pair in pairs]
    else:
        lang = config.src_lang if config.src_lang not in columns else config.tgt_lang
        raise UserError(
            f"{origin}: no column '{lang}' (columns found: {', '.join(columns)}). "
            "Set data.src_lang / data.tgt_lang to column names, or provide a "
            "'translation' column."
        )
    return ParallelText([_text(s) for s in src], [_text(t) for t in tgt], origin)


def _text(value) -> str:
    return "" if value is None else str(value).strip()


def read_pairs(config: DataConfig, role: str = "train") -> Iterator[tuple[str, str]]:
    """The pairs of a split one at a time, never the whole split in memory."""
    location = locate(config, role)
    if location.kind == "text":
        yield from _text_pairs(*location.files)
        return
    import datasets

    if location.kind == "table":
        origin = str(location.files[0])
        options = _table_options(location.builder, config)
        rows = datasets.load_dataset(
            location.builder, data_files=origin, split="train", streaming=True, **options
        )
    else:
        _go_offline_unless_hub_reachable()
        origin = f"{config.hub_id}, split '{location.split}'"
        try:
            rows = datasets.load_dataset(
                config.hub_id, config.hub_config, split=location.split, streaming=True
            )
        except Exception as error:  # offline, unknown id, or a hub error
            raise UserError(
                f"cannot stream data.hub_id {origin} ({type(error).__name__}: {error}). "
                "Without internet access, download the corpus and set data.path."
            ) from None
    for row in rows:
        yield _row_pair(row, config, origin)


def _row_pair(row: dict, config: DataConfig, origin: str) -> tuple[str, str]:
    src, tgt = config.src_lang, config.tgt_lang
    if src in row and tgt in row:
        return _text(row[src]), _text(row[tgt])
    translation = row.get("translation")
    if isinstance(translation, dict) and src in translation and tgt in translation:
        return _text(translation[src]), _text(translation[tgt])
    raise UserError(
        f"{origin}: rows have no '{src}' and '{tgt}' columns, nor a translation column with "
        f"them (found: {', '.join(row)}). Set data.src_lang / data.tgt_lang."
    )


def open_corpus_file(path: Path) -> BinaryIO:
    """`path` opened to read bytes; a UserError naming it where it cannot be (a directory
    in a file's place, no permission)."""
    try:
        return path.open("rb")
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror or error}.") from None


def _text_pairs(src_file: Path, tgt_file: Path) -> Iterator[tuple[str, str]]:
    """Two aligned files line by line, read as read_lines reads them (UTF-8, a BOM and
    CRLF accepted, only '\\n' ends a line); files of different lengths are an error."""
    src_file, tgt_file = record(src_file, "a corpus file"), record(tgt_file, "a corpus file")
    with open_corpus_file(src_file) as src, open_corpus_file(tgt_file) as tgt:
        for number, (src_line, tgt_line) in enumerate(zip_longest(src, tgt), 1):
            if src_line is None or tgt_line is None:
                rest = 1 + sum(1 for _ in (src if src_line is not None else tgt))
                src_count = number - 1 + (rest if src_line is not None else 0)
                tgt_count = number - 1 + (rest if tgt_line is not None else 0)
                raise UserError(
                    f"parallel files differ in length: {src_file} has {src_count} lines but "
                    f"{tgt_file} has {tgt_count}. Every line of one must translate the same "
                    "line of the other."
                )
            yield _decode(src_line, src_file, number), _decode(tgt_line, tgt_file, number)


def _decode(line: bytes, path: Path, number: int) -> str:
    bom = 3 if number == 1 and line.startswith(b"\xef\xbb\xbf") else 0
    try:
        text = line[bom:].removesuffix(b"\n").decode("utf-8")
    except UnicodeDecodeError as error:
        with path.open("rb") as handle:  # the lines before, for the offset in the file
            before = b"".join(islice(handle, number - 1))
        raise _not_utf8(path, before + line, len(before) + bom + error.start, error) from None
    return text.removesuffix("\r")


def _not_utf8(path: Path, data: bytes, at: int, error: UnicodeDecodeError) -> UserError:
    """The error of the byte at offset `at` of `data` (the file's bytes, from its first),
    named by its line and its byte of the line, counted from 1 as lines are, and its offset
    in the file, counted from 0 as xxd and dd count."""
    line, start = data.count(b"\n", 0, at) + 1, data.rfind(b"\n", 0, at) + 1
    return UserError(
        f"{path} is not valid UTF-8: line {line}, byte {at - start + 1} of the line, offset "
        f"{at} in the file (byte 0x{data[at]:02x}: {error.reason}). Convert the file to UTF-8 "
        "(e.g. with iconv)."
    )
