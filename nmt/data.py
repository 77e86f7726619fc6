"""Parallel corpora -> subword ids -> length-bucketed token batches.

Corpora come from the Hugging Face hub (`data.hub_id`), a local directory (`data.path`)
of `{split}.{lang}` text files or `{split}.tsv|jsonl|parquet` files, or the generated
demo corpus. Every split ends up as two aligned lists of strings; any way in which the
two sides could silently misalign is an error instead.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.config import DataConfig
from nmt.errors import UserError
from nmt.tokenizer import Tokenizer, Vocab

log = logging.getLogger(__name__)

ROLES = ("train", "valid", "test")
TABLE_FORMATS = {"tsv": "csv", "jsonl": "json", "parquet": "parquet"}


@dataclass
class ParallelText:
    """Aligned sentence pairs of one split; `origin` says where they came from, for messages."""

    src: list[str]
    tgt: list[str]
    origin: str


def cache_dir(config: DataConfig) -> Path:
    default = os.environ.get("NMT_CACHE") or Path.home() / ".cache" / "nmt"
    return Path(config.cache_dir or default)


def load_split(config: DataConfig, role: str) -> ParallelText:
    """Reads the split that plays `role` (train, valid or test) from wherever the config says."""
    text = _read_split(config, role)
    if not text.src:
        raise UserError(f"{text.origin}: the {role} split has no sentence pairs.")
    return text


def _read_split(config: DataConfig, role: str) -> ParallelText:
    split = getattr(config.splits, role)
    if config.path:
        return _read_local(Path(config.path), split, config)
    if config.demo:
        from nmt.demo import DEMO_VERSION, write_demo_corpus

        directory = write_demo_corpus(cache_dir(config) / "demo" / f"v{DEMO_VERSION}")
        return _read_local(directory, split, config)
    if config.hub_id:
        return _read_hub(config, getattr(config.hub_splits or config.splits, role))
    raise UserError(
        "config key 'data': no corpus given. Set data.path to a directory of parallel files, "
        "data.hub_id to a Hugging Face dataset, or data.demo: true for the built-in demo corpus."
    )


def _read_local(directory: Path, split: str, config: DataConfig) -> ParallelText:
    if not directory.is_dir():
        problem = "is not a directory" if directory.exists() else "does not exist"
        raise UserError(
            f"data.path {directory} {problem}. Point it at the folder that "
            f"holds {split}.{config.src_lang} and {split}.{config.tgt_lang}."
        )
    src_file = directory / f"{split}.{config.src_lang}"
    tgt_file = directory / f"{split}.{config.tgt_lang}"
    if src_file.exists() and tgt_file.exists():
        _require_content(src_file, tgt_file)
        return _read_text_pair(src_file, tgt_file)
    for suffix, builder in TABLE_FORMATS.items():
        table = directory / f"{split}.{suffix}"
        if table.exists():
            _require_content(table)
            return _read_table(table, builder, config)
    found = ", ".join(sorted(p.name for p in directory.iterdir())[:12]) or "nothing"
    raise UserError(
        f"data.path {directory}: no files for split '{split}'. Expected {src_file.name} and "
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


def read_lines(path: Path) -> list[str]:
    """UTF-8 lines without line ends; a BOM and CRLF endings are accepted silently."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}.") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise UserError(
            f"{path} is not valid UTF-8: line {line}, byte offset {error.start} "
            f"({error.reason}). Convert the file to UTF-8 (e.g. with iconv)."
        ) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _read_text_pair(src_file: Path, tgt_file: Path) -> ParallelText:
    src, tgt = read_lines(src_file), read_lines(tgt_file)
    if len(src) != len(tgt):
        raise UserError(
            f"parallel files differ in length: {src_file} has {len(src)} lines but {tgt_file} "
            f"has {len(tgt)}. Every line of one must translate the same line of the other."
        )
    return ParallelText(src, tgt, f"{src_file} / {tgt_file.name}")


def _read_table(table: Path, builder: str, config: DataConfig) -> ParallelText:
    import datasets

    options = {}
    if builder == "csv":
        options = dict(
            delimiter="\t",
            column_names=[config.src_lang, config.tgt_lang],
            quoting=3,
            keep_default_na=False,
        )
    try:
        dataset = datasets.load_dataset(builder, data_files=str(table), split="train", **options)
    except Exception as error:  # the builders raise many types; all mean "unreadable file"
        raise UserError(f"cannot read {table} as {table.suffix[1:]}: {error}") from None
    return _columns(dataset, config, str(table))


def _read_hub(config: DataConfig, split: str) -> ParallelText:
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
            f"{split}.{config.src_lang} and {split}.{config.tgt_lang}."
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


@dataclass
class EncodedSplit:
    """Subword ids of a split; `keep` maps row -> index in the original text (after filtering)."""

    src: list[list[int]]
    tgt: list[list[int]]
    keep: list[int]


def encode_split(text: ParallelText, tokenizer: Tokenizer, max_len: int | None) -> EncodedSplit:
    """Encodes both sides; with `max_len`, drops empty and over-long pairs and logs the counts."""
    src, tgt = tokenizer.src.encode(text.src), tokenizer.tgt.encode(text.tgt)
    if max_len is None:
        return EncodedSplit(src, tgt, list(range(len(src))))
    empty = long = 0
    keep = []
    for index, (s, t) in enumerate(zip(src, tgt, strict=True)):
        if not s or not t:
            empty += 1
        elif len(s) > max_len or len(t) > max_len:
            long += 1
        else:
            keep.append(index)
    log.info(
        "%s: %d pairs kept, %d empty dropped, %d longer than data.max_len=%d dropped",
        text.origin,
        len(keep),
        empty,
        long,
        max_len,
    )
    if not keep:
        raise UserError(
            f"{text.origin}: no training pairs left ({empty} empty, {long} longer than "
            f"data.max_len={max_len} subwords). Check the files or raise data.max_len."
        )
    return EncodedSplit([src[i] for i in keep], [tgt[i] for i in keep], keep)


@dataclass
class Batch:
    """Padded tensors of one batch. Masks are True on real tokens."""

    src: torch.Tensor  # [B, S]
    src_lengths: torch.Tensor  # [B], on the CPU (packing needs it there)
    tgt_in: torch.Tensor  # [B, T]  bos y_1 ... y_n
    tgt_out: torch.Tensor  # [B, T]  y_1 ... y_n eos
    num_tgt_tokens: int  # real target tokens, eos included

    def to(self, device: torch.device) -> Batch:
        return Batch(
            self.src.to(device),
            self.src_lengths,
            self.tgt_in.to(device),
            self.tgt_out.to(device),
            self.num_tgt_tokens,
        )


def pad(sequences: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """[B, max_len] int64, right-padded."""
    width = max((len(s) for s in sequences), default=0)
    out = torch.full((len(sequences), max(width, 1)), pad_id, dtype=torch.long)
    for row, ids in enumerate(sequences):
        out[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
    return out


def make_batch(
    src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], vocab: Vocab, src_pad: int
) -> Batch:
    tgt_in = pad([[vocab.bos_id, *t] for t in tgt], vocab.pad_id)
    tgt_out = pad([[*t, vocab.eos_id] for t in tgt], vocab.pad_id)
    lengths = torch.tensor([max(len(s), 1) for s in src], dtype=torch.long)
    return Batch(pad(src, src_pad), lengths, tgt_in, tgt_out, sum(len(t) + 1 for t in tgt))


class TokenBatcher:
    """Batches of similar-length pairs under a budget of padded target tokens.

    Each epoch shuffles the pairs, sorts them by length within pools of many batches (so
    padding stays small while batches still vary), cuts batches under the budget and
    shuffles the batch order. The order is a pure function of (seed, epoch), which is what
    makes resuming at a batch position exact.
    """

    def __init__(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int],
        batch_tokens: int,
        seed: int,
        pool_batches: int = 100,
    ):
        self.src_lengths = src_lengths
        self.tgt_lengths = [length + 1 for length in tgt_lengths]  # + bos/eos
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.pool_batches = pool_batches

    def epoch(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.tgt_lengths)))
        rng.shuffle(order)
        mean = sum(self.tgt_lengths) / max(len(self.tgt_lengths), 1)
        pool = max(1, int(self.pool_batches * self.batch_tokens / mean))
        batches: list[list[int]] = []
        for start in range(0, len(order), pool):
            chunk = sorted(
                order[start : start + pool],
                key=lambda i: (self.tgt_lengths[i], self.src_lengths[i]),
            )
            batches.extend(self._cut(chunk))
        rng.shuffle(batches)
        return batches

    def _cut(self, indices: list[int]) -> list[list[int]]:
        batches, current, longest = [], [], 0
        for index in indices:
            length = self.tgt_lengths[index]
            if current and max(longest, length) * (len(current) + 1) > self.batch_tokens:
                batches.append(current)
                current, longest = [], 0
            current.append(index)
            longest = max(longest, length)
        if current:
            batches.append(current)
        return batches
