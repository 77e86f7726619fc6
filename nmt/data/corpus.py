"""Everything training reads, prepared in one direction: read the splits, build the
tokenizer, then turn the train split into batches (nmt/data/sources.py).

The cached and streamed train sources train SentencePiece on the first TOKENIZER_SAMPLE pairs
(the in-memory source on all of them). Valid and test splits are small and always read into
memory as text: validation and the final test translate them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from nmt.config import Experiment
from nmt.data.sources import (
    IndexedSource,
    SampledSource,
    StreamSource,
    arrow_source,
    memory_source,
)
from nmt.data.splits import ParallelText, cache_dir, load_split, read_pairs
from nmt.data.tokenizer import Tokenizer, build_tokenizer

TOKENIZER_SAMPLE = 200_000


@dataclass
class Corpus:
    """Everything training reads: the tokenizer, the train source, raw valid/test text."""

    tokenizer: Tokenizer
    train: IndexedSource | SampledSource | StreamSource
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
