"""A model's own tags: a sentence as a model trained with data.markup_augment reads it
(`model_tags`), and its translation's placeholder tags turned back into the sentence's
elements (`place_by_model`)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from nmt.data import markup_augment
from nmt.data.markup.elements import (
    PUNCTUATION_AFTER,
    PUNCTUATION_BEFORE,
    Sentence,
    punctuation_edge,
    rendered,
    word_spans,
)


@dataclass(frozen=True)
class ModelTags:
    """A sentence as a model trained with data.markup_augment reads it: its words with the
    placeholder tags of nmt/data/markup_augment.py where its elements stand (`text`), and
    which element each placeholder names."""

    text: str
    paired: dict[int, tuple[str, str]]  # element -> its open and close placeholders
    void: int | None  # the element without words <t0/> stands for


def model_tags(sentence: Sentence) -> ModelTags | None:
    """The sentence with placeholders, or None when it holds more than they can name (two
    elements around words, one without), or an element around part of a word (its
    punctuation aside: "<i>a bird</i>." reads "<t1> a bird. </t1>")."""
    holding = [i for i, e in enumerate(sentence.elements) if e.holds_words]
    empty = [i for i, e in enumerate(sentence.elements) if not e.holds_words]
    if len(holding) > len(markup_augment.PAIRED) or len(empty) > 1:
        return None
    words = word_spans(sentence.text)
    before: dict[int, list[str]] = {}
    after: dict[int, list[str]] = {}
    paired = {}
    for index, pair in zip(holding, markup_augment.PAIRED, strict=False):
        element = sentence.elements[index]
        inside = [k for k, (a, b) in enumerate(words) if a < element.end and b > element.start]
        if not inside:
            return None
        cut = sentence.text[words[inside[0]][0] : element.start]
        cut += sentence.text[element.end : words[inside[-1]][1]]
        if any(char.isalnum() for char in cut):
            return None  # around part of a word: "<b>dog</b>s" (punctuation aside)
        before.setdefault(inside[0], []).append(pair[0])
        after.setdefault(inside[-1], []).insert(0, pair[1])
        paired[index] = pair
    void = empty[0] if empty else None
    if void is not None:
        at = bisect.bisect_left([a for a, _ in words], sentence.elements[void].start)
        before.setdefault(at, []).insert(0, markup_augment.VOID)
    out: list[str] = []
    for k, (a, b) in enumerate(words):
        out += [*before.get(k, []), sentence.text[a:b], *after.get(k, [])]
    out += before.get(len(words), [])
    return ModelTags(" ".join(out), paired, void)


def place_by_model(sentence: Sentence, tags: ModelTags, output: str) -> str | None:
    """The sentence translated with its tags where the model wrote their placeholders in
    `output`, or None where it did not write each once, in order and nested as the source's
    elements are."""
    symbols, void = markup_augment.SYMBOLS, markup_augment.VOID
    words = output.split()
    plain_words = [w for w in words if w not in symbols]
    expected = {s for pair in tags.paired.values() for s in pair}
    expected |= {void} if tags.void is not None else set()
    if any(words.count(symbol) != (symbol in expected) for symbol in symbols):
        return None
    before = {w: sum(x not in symbols for x in words[: words.index(w)]) for w in expected}
    spans = {i: (before[o], before[c]) for i, (o, c) in tags.paired.items()}
    if any(words.index(o) > words.index(c) or a == b for (o, c), (a, b) in
           zip(tags.paired.values(), spans.values(), strict=True)):  # fmt: skip
        return None
    if len(spans) == 2:
        (i, one), (k, two) = spans.items()
        nested = sentence.elements[k].parent == i
        if nested != (one[0] <= two[0] and two[1] <= one[1]) or (
            not nested and not _apart(one, two)
        ):
            return None
    target = " ".join(plain_words)
    bounds = word_spans(target)
    places = {}
    for index, element in enumerate(sentence.elements):
        if index in spans:
            first, last = spans[index]
            start, end = bounds[first][0], bounds[last - 1][1]
            held = sentence.text[element.start : element.end].strip()
            if not PUNCTUATION_BEFORE.search(held):
                start += punctuation_edge(PUNCTUATION_BEFORE, target[start:end])
            if not PUNCTUATION_AFTER.search(held):
                end -= punctuation_edge(PUNCTUATION_AFTER, target[start:end])
            places[index] = (start, end)
        else:
            word = before[void]
            point = bounds[word][0] if word < len(bounds) else len(target)
            places[index] = (point, point)
    parents = [element.parent for element in sentence.elements]
    return rendered(target, sentence.elements, places, parents, None, sentence.escaped)


def _apart(one: tuple[int, int], other: tuple[int, int]) -> bool:
    return one[1] <= other[0] or other[1] <= one[0]
