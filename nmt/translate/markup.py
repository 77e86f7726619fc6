"""Translating marked-up lines (`nmt translate --markup html|xml`, `markup=` in Python, the
server's "markup"): each line is cut into sentences and tags (nmt/data/markup/), the
sentences are translated with their word alignments, and each tag is put back around the
target words aligned to the words it wrapped.

A paragraph's plain text is cut into sentences by sentencex (Wikimedia's splitter, rules for
some 240 languages, by the source language's code), never inside a tag around words. URLs,
e-mail addresses, numbers with units and format variables (nmt/data/markup's
PLACEHOLDERS), and what a user's own patterns match, are held out of the sentences and put
back as they were, where the alignments place them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

from sentencex import segment

from nmt.data.markup import (
    MarkupError,
    MarkupKind,
    ModelTags,
    Sentence,
    kept,
    model_tags,
    parse,
    place_by_model,
    project,
)
from nmt.data.markup_augment import SYMBOLS
from nmt.errors import UserError
from nmt.search import Hypothesis
from nmt.translate.pipeline import CHUNK_LINES, Numbering
from nmt.translate.results import Candidate, Translation

Placement = Literal["projection", "model", "both"]
PLACEMENTS: tuple[Placement, ...] = ("projection", "model", "both")


def sentence_splitter(language: str | None) -> Callable[[str], list[str]]:
    """A paragraph -> its sentences (their concatenation is the paragraph)."""
    code = language or "en"
    return lambda text: list(segment(code, text))


def held_out(patterns: Sequence[str] = ()) -> re.Pattern:
    """What markup translation copies untouched: PLACEHOLDERS and `patterns` (regular
    expressions, `--keep`), each checked."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise UserError(
                f"--keep {pattern!r} is not a regular expression ({error}); give one that "
                "matches the text to copy untouched, e.g. --keep 'ACME-[0-9]+'."
            ) from None
    return kept(patterns)


def parsed_line(
    line: str,
    markup: MarkupKind,
    split: Callable[[str], list[str]],
    number: int,
    keep: re.Pattern | None = None,
    escaped: bool | None = None,
):
    """A line's parts; malformed XML is a UserError naming the line and column."""
    try:
        return parse(line, markup, split, keep, escaped)
    except MarkupError as error:
        raise UserError(
            f"input line {number + 1}, column {error.column}: not well-formed XML "
            f"({str(error).split(': ', 1)[1]}); close each element in order, or translate "
            "it with --markup html, which accepts unclosed tags."
        ) from None


# what names one sentence's translation, which a marked-up text (several sentences joined
# with their tags) does not have: the command line's own flag for each
NOT_WITH_MARKUP = {
    "constraints": "--constraints",
    "prefix": "--prefix",
    "alignments": "--alignments",
    "attention": "--attention-plots",
    "nbest": "--nbest",
}


def marked_conflicts(**options: Any) -> list[str]:
    """Which of NOT_WITH_MARKUP `options` ask for."""
    asked = {name: options.get(name) for name in NOT_WITH_MARKUP}
    asked["nbest"] = (asked["nbest"] or 1) > 1
    return [name for name, value in asked.items() if value not in (None, False)]


def marked_translations(
    translator: Any,
    lines: Sequence[str],
    markup: MarkupKind | None,
    *,
    keep: Sequence[str] = (),
    placement: Placement | None = None,
    **options: Any,
) -> list[Translation]:
    """Translator.translate(markup=): each text's Translation, with what must not go with
    markup refused (and `keep` or `placement` without it)."""
    if markup is None:
        raise UserError("keep= and placement= are for marked-up text: give markup= too.")
    if named := marked_conflicts(**options):
        raise UserError(
            f"markup= gives each text once, with its tags, from the translations of the "
            f"sentences it holds, so {', '.join(named)} cannot go with it; each sentence's "
            "own translation and alignment are in Translation.sentences."
        )
    options = {k: v for k, v in options.items() if k not in NOT_WITH_MARKUP or k == "nbest"}
    return list(
        marked_stream(
            translator, lines, markup, chunk=None, keep=keep, placement=placement, **options
        )  # fmt: skip
    )


def marked_stream(
    translator: Any,
    lines: Iterable[str],
    markup: MarkupKind,
    *,
    chunk: int | None = CHUNK_LINES,
    done: Callable[[int], None] | None = None,
    first: Numbering = 0,
    src_lang: str | None = None,
    keep: Sequence[str] = (),
    escaped: bool | None = None,
    placement: Placement | None = None,
    **options: Any,
) -> Iterator[Translation]:
    """Each marked-up line's Translation, in order, `chunk` lines at a time: its text is the
    translation with the line's tags, and `sentences` holds each sentence's own Translation
    (plain text, with its word alignment). `first`: as `stream`'s, the number of the first
    line or each line's own (errors name it, and a line's sentences sample by it); `keep`:
    patterns of text to copy untouched besides PLACEHOLDERS; `escaped`: as `parse`'s;
    `placement`: how tags find their place (PLACEMENTS; None: projection, which placed
    tags best in docs/results.md, also for a model trained with data.markup_augment);
    `options`: `translator.stream`'s."""
    language = src_lang or (translator.source_languages or [None])[0]
    split, held = sentence_splitter(language), held_out(keep)
    placement = placement or "projection"
    if placement != "projection" and not knows_tags(translator):
        raise UserError(
            f"markup placement {placement!r} needs a model trained with data.markup_augment "
            "(it writes the tags itself); this one was not: use projection."
        )
    numbers = itertools.count(first) if isinstance(first, int) else iter(first)
    lines = iter(lines)
    while batch := list(itertools.islice(lines, chunk or None)):
        numbered = [next(numbers) for _ in batch]
        parsed = [
            parsed_line(line, markup, split, number, held, escaped)
            for line, number in zip(batch, numbered, strict=True)
        ]
        sentences = [part for parts in parsed for part in parts if isinstance(part, Sentence)]
        owners = [
            number
            for number, parts in zip(numbered, parsed, strict=True)
            for part in parts
            if isinstance(part, Sentence)
        ]
        tags = [None if placement == "projection" else model_tags(s) for s in sentences]
        read = [(t.text if t else s.text) for s, t in zip(sentences, tags, strict=True)]
        found = translator.stream(
            [" ".join(text.split()) for text in read],  # a line's breaks too
            alignments=True,
            chunk=None,
            first=owners,
            src_lang=src_lang,
            **options,
        )
        translated = iter(list(zip(found, tags, strict=True)))
        for line, parts in zip(batch, parsed, strict=True):
            yield _joined(line, parts, translated, placement)
        if done is not None:
            done(len(batch))


def _joined(line: str, parts: Sequence, translated: Iterator, placement: Placement) -> Translation:
    """A line's Translation from its parts and the translations of its sentences."""
    text, own = [], []
    for part in parts:
        if not isinstance(part, Sentence):
            text.append(part)
            continue
        translation, tags = next(translated)
        own.append(translation)
        text.append(_placed(part, translation, tags, placement))
    hypotheses = [t.hypotheses[0] for t in own if t.nbest]
    merged = Hypothesis(
        tokens=[token for h in hypotheses for token in h.tokens],
        score=sum(h.score for h in hypotheses),
        attention=None,
        steps=sum(h.steps for h in hypotheses),
    )
    score = sum(t.score for t in own)
    candidate = Candidate("".join(text), score, merged)
    truncated = any(t.truncated for t in own)
    src_ids = [token for t in own for token in t.src_ids]
    return Translation(line, src_ids, [candidate], truncated=truncated, sentences=tuple(own))


def _placed(
    sentence: Sentence, translation: Translation, tags: ModelTags | None, placement: Placement
) -> str:
    """The sentence's translation with its tags: where the model wrote them (model, both),
    else by the alignments (both, projection); a model's tags it did not write each once
    and in order fall back to wrapping its parent's words (model)."""
    if tags is None:
        return project(sentence, translation.text, alignment_pairs(translation.alignment))
    placed = place_by_model(sentence, tags, translation.text)
    if placed is not None:
        return placed
    plain = " ".join(w for w in translation.text.split() if w not in SYMBOLS)
    links = [] if placement == "model" else _without_symbols(translation, tags.text)
    return project(sentence, plain, links)


def _without_symbols(translation: Translation, source: str) -> list[tuple[int, int]]:
    """The translation's alignment between the words of both sides but the placeholders."""

    def numbering(words: list[str]) -> list[int | None]:
        count, out = 0, []
        for word in words:
            out.append(None if word in SYMBOLS else count)
            count += word not in SYMBOLS
        return out

    src, tgt = numbering(source.split()), numbering(translation.text.split())
    return [
        (src[i], tgt[j]) for i, j in alignment_pairs(translation.alignment)
        if i < len(src) and j < len(tgt) and src[i] is not None and tgt[j] is not None
    ]  # fmt: skip


def knows_tags(translator: Any) -> bool:
    """Whether the translator's model was trained with data.markup_augment's tags."""
    tokenizer = getattr(translator, "tokenizer", None)
    if tokenizer is None:
        return False
    vocab = tokenizer.src
    return all(vocab.processor.piece_to_id(s) != vocab.unk_id for s in SYMBOLS)


def alignment_pairs(alignment: str | None) -> list[tuple[int, int]]:
    """Pharaoh 'i-j ...' -> [(i, j), ...]."""
    pairs = []
    for pair in (alignment or "").split():
        source, target = pair.split("-")
        pairs.append((int(source), int(target)))
    return pairs
