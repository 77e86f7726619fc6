"""Lines in, translations out, whatever runs the search (our models, or CTranslate2's for
an exported one): sources cut at decode.max_src_len subwords, each chunk of lines sorted by
length into batches (`workers` of them decoded side by side), candidates best first, blank
lines blank, input order kept.

Lines are read and answered a chunk at a time, so memory is bounded by the chunk, not the
input; attention is kept only where alignments or attention maps are asked for. Lines are
numbered from the start of their input (`first`: how many came before, for an input read in
several calls; or each line's own number, for the lines a pivot's second leg translates or
a server's batch of several requests), for messages and for sampling, which seeds each line
by its number: a line draws the same samples whatever chunk, batch or worker it falls in.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import torch

from nmt.config import DecodeConfig
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search import Hypothesis, max_lengths
from nmt.search.constraints import Constraints, satisfies
from nmt.translate.alignment import hypothesis_alignment
from nmt.translate.constraints import ConstraintError, encode_constraints, parse_constraints
from nmt.translate.parallel import parallel_map
from nmt.translate.results import AttentionMap, Candidate, Translation

log = logging.getLogger(__name__)

# lines sorted and batched together: a bound on memory (a line keeps a kilobyte or two, its
# attention only where asked) that leaves the batches as full and as even as one call makes
CHUNK_LINES = 5_000
# source ids, decode settings, each source's line number in its input, each source's
# constraints -> each source's hypotheses
Search = Callable[
    [list[list[int]], DecodeConfig, list[int], list[Constraints | None]], list[list[Hypothesis]]
]
# the number of the first line in its input (the others follow it), or each line's own
Numbering = int | Iterable[int]


@dataclasses.dataclass(frozen=True)
class Wanted:
    """What each translation carries besides its text."""

    alignments: bool = False  # Pharaoh word alignments
    attention: bool = False  # attention maps


def translate_stream(
    lines: Iterable[str],
    tokenizer: Tokenizer,
    decode: DecodeConfig,
    search: Search,
    wanted: Wanted = Wanted(),
    batch_size: int | None = None,
    workers: int = 1,
    constraints: Iterable[Any] | None = None,
    prefixes: Iterable[str | None] | None = None,
    chunk_lines: int | None = CHUNK_LINES,
    done: Callable[[int], None] | None = None,
    first: Numbering = 0,
) -> Iterator[Translation]:
    """Each line's Translation, in order, a chunk of `chunk_lines` lines at a time (None: all
    lines in one). `constraints` and `prefixes`: one per line (None: none), read in step
    with the lines; when they end first, a UserError names them (by their `name`, if they
    have one). `done` hears the number of sentences of each batch searched (and of each
    chunk's blank lines), so that it counts every line. `first`: the lines' numbering (see
    the module's docstring)."""
    batch_size = batch_size or decode.batch_size
    items = in_step(lines, constraints, prefixes, first)
    while chunk := list(itertools.islice(items, chunk_lines)):
        yield from _translate_chunk(
            chunk, tokenizer, decode, search, wanted, batch_size, workers, done
        )


def _translate_chunk(
    chunk: list[tuple[int, str, Any, str | None]],
    tokenizer: Tokenizer,
    decode: DecodeConfig,
    search: Search,
    wanted: Wanted,
    batch_size: int,
    workers: int,
    done: Callable[[int], None] | None,
) -> list[Translation]:
    """The chunk's translations in order; each item: (the line's number in its input,
    counted from 0, the line, its constraints, its prefix)."""
    numbers = [number for number, _, _, _ in chunk]
    lines = [line for _, line, _, _ in chunk]
    encoded = tokenizer.src.encode([line.strip() for line in lines])
    src_ids = truncated(encoded, decode.max_src_len, numbers)
    guides = _encoded_guides(tokenizer, decode, src_ids, chunk)
    results = [
        Translation(line, ids, [], len(ids) < len(full))
        for line, ids, full in zip(lines, src_ids, encoded, strict=True)
    ]
    order = sorted((i for i, ids in enumerate(src_ids) if ids), key=lambda i: len(src_ids[i]))
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]

    def searched(batch: list[int]) -> list[list[Hypothesis]]:
        sources = [src_ids[i] for i in batch]
        found = search(sources, decode, [numbers[i] for i in batch], [guides[i] for i in batch])
        if done is not None:
            done(len(batch))
        return found

    found = parallel_map(searched, batches, workers)
    if done is not None and len(order) < len(chunk):
        done(len(chunk) - len(order))  # the blank lines, which need no search
    for batch, hypotheses_of in zip(batches, found, strict=True):
        for index, hypotheses in zip(batch, hypotheses_of, strict=True):
            candidates = _candidates(
                hypotheses, src_ids[index], guides[index], tokenizer, decode, wanted
            )
            results[index] = dataclasses.replace(results[index], nbest=candidates)
    return results


def _candidates(
    hypotheses: list[Hypothesis],
    src_ids: list[int],
    guide: Constraints | None,
    tokenizer: Tokenizer,
    decode: DecodeConfig,
    wanted: Wanted,
) -> list[Candidate]:
    """A sentence's candidates, best first, with what `wanted` asks for; a hypothesis keeps
    its attention only then."""
    copied = any(t >= tokenizer.tgt.size for h in hypotheses for t in h.tokens)
    keep = wanted.alignments or wanted.attention
    # a copy model's output names the source pieces it copied
    src_pieces = tokenizer.src.pieces(src_ids) if keep or copied else []
    words = _words_only(src_pieces, tokenizer.src.prefix)
    candidates = [
        Candidate(
            tokenizer.tgt.decode(hypothesis.tokens, src_pieces),
            hypothesis.normalised_score(decode.alpha, decode.coverage_penalty),
            hypothesis if keep else dataclasses.replace(hypothesis, attention=None),
            hypothesis_alignment(hypothesis, words, tokenizer.tgt) if wanted.alignments else None,
            AttentionMap.of(hypothesis, src_pieces, tokenizer) if wanted.attention else None,
            None if guide is None else satisfies(hypothesis.tokens, guide),
        )
        for hypothesis in hypotheses
    ]
    # beam search ranks its n-best already; samples come in the order drawn
    candidates.sort(key=lambda candidate: candidate.score, reverse=True)
    return candidates


def _words_only(src_pieces: list[str], prefix: list[int]) -> list[str]:
    """The source pieces with the language tag in front (if any) as a piece of no word, so
    word alignments count the source's own words from 0."""
    return [""] * len(prefix) + src_pieces[len(prefix) :]


def in_step(
    lines: Iterable[str],
    constraints: Iterable[Any] | None,
    prefixes: Iterable[str | None] | None,
    first: Numbering = 0,
) -> Iterator[tuple[int, str, Any, str | None]]:
    """(the line's number, line, its constraints, its prefix) for each line (`first`: the
    lines' numbering, from 0); a UserError when the constraints or the prefixes end before
    the lines. Values after the last line are left unread."""
    numbered = enumerate(lines, first) if isinstance(first, int) else zip(first, lines, strict=True)
    if constraints is None and prefixes is None:
        yield from ((number, line, None, None) for number, line in numbered)
        return
    streams = [
        (itertools.repeat(None) if values is None else iter(values), values, name)
        for values, name in ((constraints, "constraints"), (prefixes, "prefix"))
    ]
    missing = object()
    for number, line in numbered:
        found = []
        for stream, values, name in streams:
            value = next(stream, missing)
            if value is missing:
                raise UserError(
                    f"{getattr(values, 'name', name)}: it ends before the lines to translate "
                    f"do (at line {number + 1}); give one per line (a blank one, or "
                    "None, for none)."
                )
            found.append(value)
        yield number, line, found[0], found[1]


def _encoded_guides(
    tokenizer: Tokenizer,
    decode: DecodeConfig,
    src_ids: list[list[int]],
    chunk: list[tuple[int, str, Any, str | None]],
) -> list[Constraints | None]:
    """Each line's constraints and prefix as target ids, or a ConstraintError naming the
    line by its number."""
    if all(wanted is None and prefix is None for _, _, wanted, prefix in chunk):
        return [None] * len(src_ids)
    lengths = torch.tensor([len(ids) for ids in src_ids])
    limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra).tolist()
    guides = []
    for ids, (number, _, wanted, prefix), limit in zip(src_ids, chunk, limits, strict=True):
        try:
            guide = encode_constraints(
                tokenizer.tgt, parse_constraints(wanted), prefix, limit, decode.max_constraints
            )
        except ConstraintError as error:
            raise error.at(number) from None
        guides.append(guide if ids else None)
    return guides


def truncated(
    src_ids: list[list[int]], limit: int, numbers: Sequence[int] | None = None
) -> list[list[int]]:
    """Cuts sources at decode.max_src_len subwords, so one huge line cannot exhaust memory
    (`numbers`: each source's line number in its input, for the warning; None: 0, 1, ...)."""
    long = [index for index, ids in enumerate(src_ids) if len(ids) > limit]
    if not long:
        return src_ids
    log.warning(
        "warning: %d source line(s) longer than decode.max_src_len=%d subwords were cut to "
        "that length (first: line %d, %d subwords); to keep more, raise the limit with "
        "--max-src-len N.",
        len(long),
        limit,
        (long[0] if numbers is None else numbers[long[0]]) + 1,
        len(src_ids[long[0]]),
    )
    return [ids[:limit] for ids in src_ids]


def per_sentence(
    given: Any, lines: Sequence[str], single: bool, name: str, parse: Callable[[Any], Any]
) -> list[Any]:
    """One parsed value per sentence: `given` is one value for a single sentence, or a
    sequence with one per sentence (None: none)."""
    if given is None:
        return [None] * len(lines)
    values = [given] if single else given
    if single and isinstance(given, Sequence) and not isinstance(given, str):
        raise UserError(f"{name}: one sentence takes one {name} value, not a list.")
    if isinstance(values, (str, Mapping)) or not isinstance(values, Sequence):
        raise UserError(f"{name}: give one per sentence, a list as long as the sentences.")
    if len(values) != len(lines):
        raise UserError(
            f"{name}: {len(values)} given for {len(lines)} sentences; give one per sentence "
            "(None for none)."
        )
    parsed = []
    for index, value in enumerate(values):
        try:
            parsed.append(parse(value))
        except ConstraintError as error:
            raise error.at(index) from None
    return parsed
