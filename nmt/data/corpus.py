"""Everything training reads: read the splits of each direction, build the tokenizer, then
turn the train split into batches (nmt/data/sources.py).

The cached and streamed train sources (one direction only) train SentencePiece on the first
TOKENIZER_SAMPLE pairs (the in-memory source on all of them). Valid and test splits are
small and always read into memory as text: validation and the final test translate them.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from nmt.config import DataConfig, Experiment
from nmt.data.cleaning import cleaned_pairs, cleaning, train_pairs
from nmt.data.directions import balanced_lines, direction_name
from nmt.data.fuzzy_repair import SYMBOLS as FUZZY_SYMBOLS
from nmt.data.fuzzy_repair import repaired_pairs
from nmt.data.markup_augment import SYMBOLS as MARKUP_SYMBOLS
from nmt.data.markup_augment import with_markup
from nmt.data.sources import (
    IndexedSource,
    SampledSource,
    StreamSource,
    arrow_source,
    memory_source,
)
from nmt.data.splits import ParallelText, cache_dir, load_split, load_train_split
from nmt.data.tokenizer import Tokenizer, build_tokenizer, check_symbols
from nmt.errors import UserError

TOKENIZER_SAMPLE = 200_000
UNKNOWN_WARNING = 0.01  # share of <unk> pieces in a valid side that a tokenizer should not reach

log = logging.getLogger("nmt")


@dataclass
class Corpus:
    """Everything training reads: the tokenizer, the train source, and the raw valid and
    test text of each direction ("de-en": ...; test empty when the config names no test
    split)."""

    tokenizer: Tokenizer
    train: IndexedSource | SampledSource | StreamSource
    valid: dict[str, ParallelText]
    test: dict[str, ParallelText]


def prepare_corpus(config: Experiment, run_dir: Path, tokenizer: Tokenizer | None = None) -> Corpus:
    """Reads the splits and trains (or takes, e.g. from last.pt on resume) the tokenizer."""
    data = config.data
    directions = {direction_name(*pair): data.direction(*pair) for pair in data.pairs}
    valid = {name: load_split(one, "valid") for name, one in directions.items()}
    test = {}
    if data.splits.test:
        test = {name: load_split(one, "test") for name, one in directions.items()}
    if data.streaming or data.num_proc:
        tokenizer, train = _cached_or_streamed(config, run_dir, tokenizer)
    else:
        tokenizer, train = _in_memory(config, directions, tokenizer)
    warn_unknown_pieces(tokenizer, valid, data.pairs)
    return Corpus(tokenizer, train, valid, test)


def _in_memory(
    config: Experiment, directions: dict[str, DataConfig], tokenizer: Tokenizer | None
) -> tuple[Tokenizer, IndexedSource | SampledSource]:
    limits = config.data.max_pairs or {}
    texts = {
        name: _repaired(
            _tagged(
                _cleaned(_first_pairs(load_train_split(one), limits.get(name)), one, config),
                config,
            ),
            config,
        )
        for name, one in directions.items()
    }
    if tokenizer is None:
        tokenizer = _trained_tokenizer(config, texts)
    elif symbols := own_symbols(config.data):
        check_symbols(
            tokenizer, symbols, "the tokenizer of train.init_from (or of the run resumed)"
        )
    if tokenizer.tags:
        counts = target_piece_counts(tokenizer, config.data.pairs, texts)
        tokenizer = dataclasses.replace(tokenizer, target_pieces=counts, tag_place=config.data.tags)
    return tokenizer, memory_source(texts, tokenizer, config)


def _tagged(text: ParallelText, config: Experiment) -> ParallelText:
    """The train split with data.markup_augment's share of its pairs tagged."""
    if not config.data.markup_augment:
        return text
    src, tgt = with_markup(text.src, text.tgt, config.data.markup_augment, config.train.seed)
    return dataclasses.replace(text, src=src, tgt=tgt)


def _repaired(text: ParallelText, config: Experiment) -> ParallelText:
    """The train split with data.fuzzy_matches' matches appended to its sources."""
    fuzzy = config.data.fuzzy_matches
    if fuzzy is None:
        return text
    sources, targets = repaired_pairs(text.src, text.tgt, fuzzy, config.train.seed)
    return dataclasses.replace(text, src=sources, tgt=targets)


def own_symbols(data: DataConfig) -> tuple[str, ...]:
    """What the tokenizer must read as one piece each: data.markup_augment's tags and
    data.fuzzy_matches' separator, where they are on."""
    markup = MARKUP_SYMBOLS if data.markup_augment else ()
    return (*markup, *(FUZZY_SYMBOLS if data.fuzzy_matches else ()))


def target_piece_counts(
    tokenizer: Tokenizer, pairs: list[tuple[str, str]], texts: dict[str, ParallelText]
) -> dict[str, list[int]]:
    """How often each target language's training targets use each target id (the
    directions into one language added up), in language order."""
    counts: dict[str, collections.Counter] = {}
    for (_, target), text in zip(pairs, texts.values(), strict=True):
        found = counts.setdefault(target, collections.Counter())
        for ids in tokenizer.tgt.encode(text.tgt):
            found.update(ids)
    size = tokenizer.tgt.size
    return {
        language: [found.get(index, 0) for index in range(size)]
        for language, found in sorted(counts.items())
    }


def _cached_or_streamed(
    config: Experiment, run_dir: Path, tokenizer: Tokenizer | None
) -> tuple[Tokenizer, IndexedSource | StreamSource]:
    data = config.data
    if tokenizer is not None and tokenizer.tags:
        raise UserError(
            "a tokenizer with target-language tags (from train.init_from) needs the train split "
            "in memory; set data.streaming: false and data.num_proc: null."
        )
    if tokenizer is None:
        pairs = train_pairs(data, cleaning(config))
        sample = [] if config.tokenizer.model else list(islice(pairs, TOKENIZER_SAMPLE))
        tokenizer = build_tokenizer(
            config.tokenizer, [s for s, _ in sample], [t for _, t in sample], cache_dir(data)
        )
    if data.streaming:
        return tokenizer, StreamSource(
            data, tokenizer, config.train.batch_tokens, config.train.seed, cleaning(config)
        )
    return tokenizer, arrow_source(config, tokenizer, run_dir / "cache")


def warn_unknown_pieces(
    tokenizer: Tokenizer, valid: dict[str, ParallelText], pairs: list[tuple[str, str]]
) -> None:
    """A warning for each language whose valid text the tokenizer reads with many <unk>
    pieces: a tokenizer given to the run (train.init_from, tokenizer.model) that never saw
    the language's characters leaves the model blind to them, and training would not say."""
    shares: dict[str, float] = {}
    for (source, target), text in zip(pairs, valid.values(), strict=True):
        for language, vocab, lines in (
            (source, tokenizer.src, text.src),
            (target, tokenizer.tgt, text.tgt),
        ):
            if language not in shares:
                ids = [i for line in vocab.encode(lines) for i in line]
                shares[language] = ids.count(vocab.unk_id) / max(1, len(ids))
    for language, share in shares.items():
        if share > UNKNOWN_WARNING:
            log.warning(
                "warning: the tokenizer reads %.1f%% of the pieces of the %s valid text as "
                "<unk>: it was trained without most of this language's characters, so the "
                "model can neither read nor write them. Use a tokenizer trained on every "
                "language of the run (for a child of train.init_from: train the parent with "
                "tokenizer.model set to a SentencePiece model of the parent's and the "
                "child's languages).",
                100 * share,
                language,
            )


def _cleaned(text: ParallelText, data: DataConfig, config: Experiment) -> ParallelText:
    """The pairs `data.clean: true` keeps (nmt/data/cleaning.py), or all of them."""
    if not config.data.clean:
        return text
    kept = list(cleaned_pairs(zip(text.src, text.tgt, strict=True), data, config.clean))
    origin = f"{text.origin} (cleaned)"
    return ParallelText([s for s, _ in kept], [t for _, t in kept], origin, text.files)


def _first_pairs(text: ParallelText, limit: int | None) -> ParallelText:
    """The first `limit` pairs (data.max_pairs), to simulate a direction with little data."""
    if limit is None or limit >= len(text.src):
        return text
    origin = f"{text.origin} (first {limit} pairs)"
    return ParallelText(text.src[:limit], text.tgt[:limit], origin)


def _trained_tokenizer(config: Experiment, texts: dict[str, ParallelText]) -> Tokenizer:
    """One direction: SentencePiece on both sides of its train split, as ever. Several: on
    a temperature-balanced sample of each language's sentences (a sample of the source
    languages and one of the target languages without a joint tokenizer), with a tag per
    target language when there are several of those."""
    data, cache = config.data, cache_dir(config.data)
    symbols = own_symbols(data)
    if len(texts) == 1:
        (text,) = texts.values()
        return build_tokenizer(config.tokenizer, text.src, text.tgt, cache, symbols=symbols)
    tags = data.target_languages if len(data.target_languages) > 1 else ()
    if config.tokenizer.joint:
        lines = _balanced(config, data.pairs, texts, ("src", "tgt"))
        return build_tokenizer(config.tokenizer, lines, [], cache, tags, symbols)
    src_lines = _balanced(config, data.pairs, texts, ("src",))
    tgt_lines = _balanced(config, data.pairs, texts, ("tgt",))
    return build_tokenizer(config.tokenizer, src_lines, tgt_lines, cache, tags, symbols)


def _balanced(
    config: Experiment,
    pairs: list[tuple[str, str]],
    texts: dict[str, ParallelText],
    sides: tuple[str, ...],
) -> list[str]:
    """A temperature-balanced sample of the distinct sentences of each language on `sides`
    ("src", "tgt") of the directions."""
    by_language: dict[str, dict[str, None]] = {}
    for pair, text in zip(pairs, texts.values(), strict=True):
        for side in sides:
            language = pair[0] if side == "src" else pair[1]
            by_language.setdefault(language, {}).update(dict.fromkeys(getattr(text, side)))
    return balanced_lines(
        {language: list(sentences) for language, sentences in by_language.items()},
        config.data.sampling_temperature,
        config.train.seed,
    )
