"""The training corpus three ways: in memory, tokenised into an Arrow cache, or streamed.

- In memory (the default, and the fastest for small corpora): every pair is read and
  encoded with SentencePiece in this process.
- `data.num_proc: N`: `datasets.map` tokenises the train split in N processes into Arrow
  files under RUN/cache/, which are memory-mapped and reused when the run is resumed or rerun.
- `data.streaming: true`: the train split is read as a `datasets.IterableDataset` and
  tokenised as it is read, so memory stays flat however large the corpus grows.

All three drop the same pairs (empty, or longer than data.max_len subwords) and cut batches
by TokenBatcher's rule: sort a pool of pairs by length, cut batches under the token budget,
shuffle the batch order, all a pure function of (seed, epoch). In memory and cached, a pool
is ~100 batches' worth of the shuffled epoch; a stream cannot be shuffled as a whole, so it
is cut into pools of consecutive pairs (~100 batches' worth of target tokens), each batched
by TokenBatcher on its own. A corpus that fits in one pool therefore gives exactly the same
batches on all three paths; a larger one gives the same multiset of pairs in every epoch.

The cached and streamed paths train SentencePiece on the first TOKENIZER_SAMPLE pairs (the
in-memory path on all of them). Valid and test splits are small and always read into memory.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain, islice, zip_longest
from pathlib import Path

from nmt.config import DataConfig, Experiment
from nmt.data import (
    TABLE_FORMATS,
    ParallelText,
    TokenBatcher,
    _go_offline_unless_hub_reachable,
    _text,
    cache_dir,
    encode_split,
    load_split,
)
from nmt.distributed import Ranks
from nmt.errors import UserError
from nmt.tokenizer import Tokenizer, build_tokenizer

log = logging.getLogger("nmt")

TOKENIZER_SAMPLE = 200_000
POOL_BATCHES = 100
CACHE_VERSION = 1
PairBatch = tuple[list[list[int]], list[list[int]]]  # source ids, target ids


@dataclass
class Corpus:
    """Everything training reads: the tokenizer, the train source, raw valid/test text."""

    tokenizer: Tokenizer
    train: IndexedSource | StreamSource
    valid: ParallelText
    test: ParallelText | None


def prepare_corpus(config: Experiment, run_dir: Path, tokenizer: Tokenizer | None = None) -> Corpus:
    """Reads the splits and trains (or takes, e.g. from last.pt on resume) the tokenizer."""
    data = config.data
    valid = load_split(data, "valid")
    test = load_split(data, "test") if data.splits.test else None
    if not (data.streaming or data.num_proc):
        text = load_split(data, "train")
        if tokenizer is None:
            tokenizer = build_tokenizer(config.tokenizer, text.src, text.tgt, cache_dir(data))
        return Corpus(tokenizer, memory_source(text, tokenizer, config), valid, test)
    if tokenizer is None:
        sample = [] if config.tokenizer.model else list(islice(read_pairs(data), TOKENIZER_SAMPLE))
        tokenizer = build_tokenizer(
            config.tokenizer, [s for s, _ in sample], [t for _, t in sample], cache_dir(data)
        )
    if data.streaming:
        train = StreamSource(data, tokenizer, config.train.batch_tokens, config.train.seed)
    else:
        train = arrow_source(config, tokenizer, run_dir / "cache")
    return Corpus(tokenizer, train, valid, test)


class IndexedSource:
    """Pairs addressable by index (lists in memory, or Arrow rows), batched by TokenBatcher."""

    def __init__(
        self,
        src_lengths: list[int],
        tgt_lengths: list[int],
        fetch: Callable[[list[int]], PairBatch],
        batch_tokens: int,
        seed: int,
    ):
        self.batcher = TokenBatcher(src_lengths, tgt_lengths, batch_tokens, seed, POOL_BATCHES)
        self.fetch = fetch
        self.description = f"{len(src_lengths)} training pairs"

    def batches(
        self, epoch: int, start: int = 0, ranks: Ranks | None = None
    ) -> Iterator[PairBatch]:
        """The epoch's batches from number `start` on (this rank's share of them)."""
        for indices in (ranks or Ranks()).shard(self.batcher.epoch(epoch)[start:]):
            yield self.fetch(indices)


def memory_source(text: ParallelText, tokenizer: Tokenizer, config: Experiment) -> IndexedSource:
    encoded = encode_split(text, tokenizer, config.data.max_len)
    return IndexedSource(
        [len(s) for s in encoded.src],
        [len(t) for t in encoded.tgt],
        lambda indices: ([encoded.src[i] for i in indices], [encoded.tgt[i] for i in indices]),
        config.train.batch_tokens,
        config.train.seed,
    )


class StreamSource:
    """The train split read afresh every epoch, batched one pool of consecutive pairs at a time;
    resuming at batch k reads (and tokenises) the stream up to it again."""

    def __init__(
        self,
        data: DataConfig,
        tokenizer: Tokenizer,
        batch_tokens: int,
        seed: int,
        pool_batches: int = POOL_BATCHES,
    ):
        self.data = data
        self.tokenizer = tokenizer
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.pool_tokens = pool_batches * batch_tokens
        self.description = "streamed training pairs"

    def batches(
        self, epoch: int, start: int = 0, ranks: Ranks | None = None
    ) -> Iterator[PairBatch]:
        pools = (self._batch_pool(pool, epoch, number) for number, pool in enumerate(self._pools()))
        return (ranks or Ranks()).shard(islice(chain.from_iterable(pools), start, None))

    def _pools(self) -> Iterator[PairBatch]:
        """Consecutive kept pairs, cut when their target tokens reach the pool budget."""
        src: list[list[int]] = []
        tgt: list[list[int]] = []
        tokens = 0
        for row in self._encoded_rows():
            if 0 < row["src_len"] <= self.data.max_len and 0 < row["tgt_len"] <= self.data.max_len:
                src.append(row["src_ids"])
                tgt.append(row["tgt_ids"])
                tokens += row["tgt_len"] + 1
            if tokens >= self.pool_tokens:
                yield src, tgt
                src, tgt, tokens = [], [], 0
        if src:
            yield src, tgt

    def _encoded_rows(self) -> Iterator[dict]:
        import datasets

        pairs = datasets.IterableDataset.from_generator(pair_rows, gen_kwargs={"config": self.data})
        return iter(pairs.map(Encode(self.tokenizer), batched=True, remove_columns=["src", "tgt"]))

    def _batch_pool(self, pool: PairBatch, epoch: int, number: int) -> Iterator[PairBatch]:
        """TokenBatcher's rule on one pool; pool 0 is seeded as the in-memory batcher is."""
        src, tgt = pool
        batcher = TokenBatcher(
            [len(s) for s in src],
            [len(t) for t in tgt],
            self.batch_tokens,
            self.seed + 7_919 * number,
            pool_batches=1 << 40,  # one pool: all of it
        )
        for indices in batcher.epoch(epoch):
            yield [src[i] for i in indices], [tgt[i] for i in indices]


class Encode:
    """The datasets.map function: text columns -> ids and lengths; picklable for num_proc."""

    def __init__(self, tokenizer: Tokenizer):
        self.state = tokenizer.to_state()
        self.tokenizer: Tokenizer | None = tokenizer

    def __getstate__(self) -> dict:
        return {"state": self.state, "tokenizer": None}

    def __call__(self, batch: dict) -> dict:
        if self.tokenizer is None:
            self.tokenizer = Tokenizer.from_state(self.state)
        src = self.tokenizer.src.encode(batch["src"])
        tgt = self.tokenizer.tgt.encode(batch["tgt"])
        return {
            "src_ids": src,
            "tgt_ids": tgt,
            "src_len": [len(ids) for ids in src],
            "tgt_len": [len(ids) for ids in tgt],
        }


def arrow_source(config: Experiment, tokenizer: Tokenizer, cache_root: Path) -> IndexedSource:
    """The train split tokenised by datasets.map into RUN/cache/train-KEY, built once."""
    import datasets

    data = config.data
    directory = cache_root / f"train-{_cache_key(data, tokenizer)}"
    if directory.is_dir():
        log.info("reusing the tokenised train split in %s", directory)
    else:
        _build_arrow_cache(data, tokenizer, directory)
    dataset = datasets.load_from_disk(str(directory))

    def fetch(indices: list[int]) -> PairBatch:
        rows = dataset[indices]
        return rows["src_ids"], rows["tgt_ids"]

    return IndexedSource(
        dataset.data.column("src_len").to_pylist(),
        dataset.data.column("tgt_len").to_pylist(),
        fetch,
        config.train.batch_tokens,
        config.train.seed,
    )


def _build_arrow_cache(data: DataConfig, tokenizer: Tokenizer, directory: Path) -> None:
    import datasets
    import pyarrow.compute as pc

    directory.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=".train-", dir=directory.parent))
    try:
        pairs = datasets.Dataset.from_generator(
            pair_rows, gen_kwargs={"config": data}, cache_dir=str(temporary / "raw")
        )
        encoded = pairs.map(
            Encode(tokenizer),
            batched=True,
            num_proc=data.num_proc if (data.num_proc or 1) > 1 else None,
            remove_columns=["src", "tgt"],
            cache_file_name=str(temporary / "encoded.arrow"),
            new_fingerprint=f"{directory.name}-encoded",
            desc="tokenising",
        )
        src_len, tgt_len = encoded.data.column("src_len"), encoded.data.column("tgt_len")
        empty = pc.or_(pc.equal(src_len, 0), pc.equal(tgt_len, 0))
        long = pc.and_(
            pc.invert(empty),
            pc.or_(pc.greater(src_len, data.max_len), pc.greater(tgt_len, data.max_len)),
        )
        keep = pc.indices_nonzero(pc.invert(pc.or_(empty, long)))
        log.info(
            "train split (tokenised with datasets.map): %d pairs kept, %d empty dropped, "
            "%d longer than data.max_len=%d dropped",
            len(keep),
            pc.sum(empty).as_py() or 0,
            pc.sum(long).as_py() or 0,
            data.max_len,
        )
        if len(keep) == 0:
            raise UserError(
                "the train split has no pairs left after dropping empty pairs and pairs longer "
                f"than data.max_len={data.max_len} subwords. Check the files or raise max_len."
            )
        encoded.select(keep.to_pylist()).save_to_disk(str(temporary / "final"))
        os.replace(temporary / "final", directory)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _cache_key(data: DataConfig, tokenizer: Tokenizer) -> str:
    """Changes when the train files (path, size, mtime), the tokenizer or max_len change."""
    digest = hashlib.sha256(f"v{CACHE_VERSION} max_len={data.max_len}".encode())
    location = locate(data)
    digest.update(repr(location.describe()).encode())
    for name in ("src", "tgt"):
        digest.update(tokenizer.to_state()[name])
    return digest.hexdigest()[:16]


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


def locate(config: DataConfig, role: str = "train") -> Location:
    split = getattr(config.splits, role)
    if config.path or config.demo:
        if config.path:
            directory = Path(config.path)
        else:
            from nmt.demo import DEMO_VERSION, write_demo_corpus

            directory = write_demo_corpus(cache_dir(config) / "demo" / f"v{DEMO_VERSION}")
        src_file = directory / f"{split}.{config.src_lang}"
        tgt_file = directory / f"{split}.{config.tgt_lang}"
        if src_file.exists() and tgt_file.exists():
            return Location("text", (src_file, tgt_file))
        for suffix, builder in TABLE_FORMATS.items():
            if (directory / f"{split}.{suffix}").exists():
                return Location("table", (directory / f"{split}.{suffix}",), builder)
        load_split(config, role)  # raises the same error message as the in-memory path
    if config.hub_id:
        return Location("hub", split=getattr(config.hub_splits or config.splits, role))
    load_split(config, role)  # no corpus configured: the in-memory path's error
    raise AssertionError("unreachable")


def pair_rows(config: DataConfig) -> Iterator[dict]:
    """Rows {src, tgt} of the train split; a generator function for datasets.from_generator."""
    for src, tgt in read_pairs(config):
        yield {"src": src, "tgt": tgt}


def read_pairs(config: DataConfig, role: str = "train") -> Iterator[tuple[str, str]]:
    """The pairs of a split one at a time, never the whole split in memory."""
    location = locate(config, role)
    if location.kind == "text":
        yield from _text_pairs(*location.files)
        return
    import datasets

    if location.kind == "table":
        options = {}
        if location.builder == "csv":
            options = dict(
                delimiter="\t",
                column_names=[config.src_lang, config.tgt_lang],
                quoting=3,
                keep_default_na=False,
            )
        origin = str(location.files[0])
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


def _text_pairs(src_file: Path, tgt_file: Path) -> Iterator[tuple[str, str]]:
    """Two aligned files line by line, read as data.read_lines reads them (UTF-8, a BOM and
    CRLF accepted, only '\\n' ends a line); files of different lengths are an error."""
    with src_file.open("rb") as src, tgt_file.open("rb") as tgt:
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
    if number == 1 and line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    try:
        text = line.removesuffix(b"\n").decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(
            f"{path} is not valid UTF-8: line {number}, byte {error.start} of the line "
            f"({error.reason}). Convert the file to UTF-8 (e.g. with iconv)."
        ) from None
    return text.removesuffix("\r")
