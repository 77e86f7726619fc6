"""The train split as batches of subword ids, three ways: in memory, cached, or streamed.

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

With `tokenizer.sample_alpha` (in memory only) every epoch segments all pairs afresh before
cutting its batches, seeded by (seed, epoch): the batches keep to the token budget whatever
the sampled lengths, and resuming mid-epoch samples the same pieces again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from pathlib import Path

from nmt.config import CleanConfig, DataConfig, Experiment
from nmt.data.batching import EncodedSplit, TokenBatcher, encode_split
from nmt.data.cleaning import cleaning, train_pairs
from nmt.data.directions import sampling_probabilities
from nmt.data.splits import ParallelText, locate
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError

log = logging.getLogger("nmt")

POOL_BATCHES = 100
CACHE_VERSION = 1
PairBatch = tuple[list[list[int]], list[list[int]]]  # source ids, target ids
Shard = Callable[[Iterable], Iterator]  # a process's share of the batches (all of them: iter)


class IndexedSource:
    """Pairs addressable by index (lists in memory, or Arrow rows), batched by `batcher`."""

    def __init__(
        self, batcher: TokenBatcher, fetch: Callable[[list[int]], PairBatch], description: str
    ):
        self.batcher = batcher
        self.fetch = fetch
        self.description = description

    def batches(self, epoch: int, start: int = 0, shard: Shard = iter) -> Iterator[PairBatch]:
        """The epoch's batches from number `start` on; `shard` picks this process's share of
        them (before they are fetched)."""
        for indices in shard(self.batcher.epoch(epoch)[start:]):
            yield self.fetch(indices)


def memory_source(
    texts: dict[str, ParallelText], tokenizer: Tokenizer, config: Experiment
) -> IndexedSource | SampledSource:
    """The train split of each direction ("de-en": text), encoded with its target's tag
    when the tokenizer has tags; several directions are drawn as data.sampling_temperature
    says (nmt/data/directions.py)."""
    data = config.data
    encoded = [
        encode_split(text, tokenizer.towards(target), data.max_len)
        for (_, target), text in zip(data.pairs, texts.values(), strict=True)
    ]
    if config.tokenizer.sample_alpha is not None:  # one direction (the config checks)
        (text,), (target,) = texts.values(), data.target_languages
        return SampledSource(text, encoded[0], tokenizer.towards(target), config)
    src = [ids for split in encoded for ids in split.src]
    tgt = [ids for split in encoded for ids in split.tgt]
    sizes = [len(split.src) for split in encoded]
    several = len(sizes) > 1
    batcher = TokenBatcher(
        [len(ids) for ids in src],
        [len(ids) for ids in tgt],
        config.train.batch_tokens,
        config.train.seed,
        POOL_BATCHES,
        groups=sizes if several else None,
        probabilities=sampling_probabilities(sizes, data.sampling_temperature) if several else None,
    )
    counts = zip(texts, sizes, strict=True)
    return IndexedSource(
        batcher,
        lambda indices: ([src[i] for i in indices], [tgt[i] for i in indices]),
        ", ".join(f"{name} {size}" for name, size in counts) + " training pairs"
        if several
        else f"{len(src)} training pairs",
    )


class SampledSource:
    """Subword regularisation: each epoch's pairs in freshly sampled segmentations, batched by
    TokenBatcher's rule on their sampled lengths. A side whose sample runs past
    `data.max_len` keeps its best segmentation, which passed the length filter."""

    def __init__(
        self, text: ParallelText, encoded: EncodedSplit, tokenizer: Tokenizer, config: Experiment
    ):
        self.src_lines = [text.src[row] for row in encoded.keep]
        self.tgt_lines = [text.tgt[row] for row in encoded.keep]
        self.encoded, self.tokenizer = encoded, tokenizer
        self.alpha, self.max_len = config.tokenizer.sample_alpha, config.data.max_len
        self.batch_tokens, self.seed = config.train.batch_tokens, config.train.seed
        self.description = f"{len(encoded.keep)} training pairs, segmentations sampled"

    def batches(self, epoch: int, start: int = 0, shard: Shard = iter) -> Iterator[PairBatch]:
        src, tgt = self.sampled(epoch)
        batcher = TokenBatcher(
            [len(s) for s in src], [len(t) for t in tgt], self.batch_tokens, self.seed, POOL_BATCHES
        )
        for indices in shard(batcher.epoch(epoch)[start:]):
            yield [src[i] for i in indices], [tgt[i] for i in indices]

    def sampled(self, epoch: int) -> PairBatch:
        """Every pair's segmentation in this epoch, a pure function of (seed, epoch)."""
        seed = zlib.crc32(f"{self.seed}:{epoch}".encode())
        src = self.tokenizer.src.sample(self.src_lines, self.alpha, seed)
        tgt = self.tokenizer.tgt.sample(self.tgt_lines, self.alpha, seed ^ 0xFFFFFFFF)
        return self._within(src, self.encoded.src), self._within(tgt, self.encoded.tgt)

    def _within(self, sampled: list[list[int]], best: list[list[int]]) -> list[list[int]]:
        limit = self.max_len
        return [
            ids if ids and (limit is None or len(ids) <= limit) else fallback
            for ids, fallback in zip(sampled, best, strict=True)
        ]


class StreamSource:
    """The train split read afresh every epoch, batched one pool of consecutive pairs at a time;
    resuming at batch k reads (and tokenises) the stream up to it again."""

    def __init__(
        self,
        data: DataConfig,
        tokenizer: Tokenizer,
        batch_tokens: int,
        seed: int,
        clean: CleanConfig | None = None,
        pool_batches: int = POOL_BATCHES,
    ):
        self.data, self.clean = data, clean
        self.tokenizer = tokenizer
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.pool_tokens = pool_batches * batch_tokens
        self.description = "streamed training pairs"

    def batches(self, epoch: int, start: int = 0, shard: Shard = iter) -> Iterator[PairBatch]:
        pools = (self._batch_pool(pool, epoch, number) for number, pool in enumerate(self._pools()))
        return shard(islice(chain.from_iterable(pools), start, None))

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

        pairs = datasets.IterableDataset.from_generator(
            pair_rows, gen_kwargs={"data": self.data, "clean": self.clean}
        )
        return iter(
            pairs.map(RowEncoder(self.tokenizer), batched=True, remove_columns=["src", "tgt"])
        )

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


class RowEncoder:
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
    directory = cache_root / f"train-{_cache_key(data, cleaning(config), tokenizer)}"
    if directory.is_dir():
        log.info("reusing the tokenised train split in %s", directory)
    else:
        _build_arrow_cache(data, cleaning(config), tokenizer, directory)
    dataset = datasets.load_from_disk(str(directory))

    def fetch(indices: list[int]) -> PairBatch:
        rows = dataset[indices]
        return rows["src_ids"], rows["tgt_ids"]

    batcher = TokenBatcher(
        dataset.data.column("src_len").to_pylist(),
        dataset.data.column("tgt_len").to_pylist(),
        config.train.batch_tokens,
        config.train.seed,
        POOL_BATCHES,
    )
    return IndexedSource(batcher, fetch, f"{len(dataset)} training pairs")


def pair_rows(data: DataConfig, clean: CleanConfig | None) -> Iterator[dict]:
    """Rows {src, tgt} of the train split (cleaned by `clean`, if given); a generator
    function for datasets.from_generator."""
    for src, tgt in train_pairs(data, clean):
        yield {"src": src, "tgt": tgt}


def _build_arrow_cache(
    data: DataConfig, clean: CleanConfig | None, tokenizer: Tokenizer, directory: Path
) -> None:
    import pyarrow.compute as pc

    directory.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=".train-", dir=directory.parent))
    try:
        pairs = _pair_dataset(data, clean, temporary / "raw")
        encoded = pairs.map(
            RowEncoder(tokenizer),
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


def _pair_dataset(data: DataConfig, clean: CleanConfig | None, cache: Path):
    """The train split's pairs as a datasets.Dataset. What reading the corpus finds wrong
    (files of different lengths, bytes that are not UTF-8) stays the UserError it is:
    datasets wraps whatever a generator raises in a DatasetGenerationError."""
    import datasets

    try:
        return datasets.Dataset.from_generator(
            pair_rows, gen_kwargs={"data": data, "clean": clean}, cache_dir=str(cache)
        )
    except datasets.exceptions.DatasetGenerationError as error:
        if isinstance(error.__cause__, UserError):
            raise error.__cause__ from None
        raise


def _cache_key(data: DataConfig, clean: CleanConfig | None, tokenizer: Tokenizer) -> str:
    """Changes when the train files (path, size, mtime), the hub dataset, the languages
    (which columns or files are the source), the cleaning, the tokenizer or max_len change."""
    corpus = (data.src_lang, data.tgt_lang, data.hub_id, data.hub_config)
    digest = hashlib.sha256(f"v{CACHE_VERSION} max_len={data.max_len} {clean} {corpus}".encode())
    location = locate(data)
    digest.update(repr(location.describe()).encode())
    for name in ("src", "tgt"):
        digest.update(tokenizer.to_state()[name])
    return digest.hexdigest()[:16]
