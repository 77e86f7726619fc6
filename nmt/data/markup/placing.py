"""Putting a sentence's tags back into its translation (`project`): each around the target
words aligned to the source words it wrapped, or around its parent's whole content."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from nmt.data.markup.elements import (
    PUNCTUATION_AFTER,
    PUNCTUATION_BEFORE,
    Element,
    Sentence,
    punctuation_edge,
    rendered,
    word_spans,
)


def project(sentence: Sentence, translation: str, alignment: Sequence[tuple[int, int]]) -> str:
    """`translation` of `sentence.text.strip()` with the sentence's tags put back, through
    `alignment`'s (source word, target word) pairs over whitespace-separated words."""
    text = sentence.text
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    points = [e.start for e in sentence.elements if e.start == e.end]
    if any(point <= len(lead) for point in points):  # the space was after a held-out element
        lead = ""
    if any(point >= len(text.rstrip()) for point in points):
        trail = ""
    target = lead + translation.strip() + trail
    source_words, target_words = word_spans(sentence.text), word_spans(target)
    aligned: dict[int, list[int]] = {}
    for i, j in alignment:
        if 0 <= i < len(source_words) and 0 <= j < len(target_words):
            aligned.setdefault(i, []).append(j)
    placer = _Placer(sentence, source_words, target, target_words, aligned)
    places = placer.places()
    parents = _output_parents(sentence.elements, places, placer.wrappers)
    padding = _padding(sentence, target, places)
    return rendered(target, sentence.elements, places, parents, padding, sentence.escaped)


def _output_parents(
    elements: list[Element], places: dict[int, tuple[int, int]], wrappers: set[int]
) -> list[int | None]:
    """Each element's parent in the output: the innermost element whose place holds its
    place. Places alike nest by depth in the source, a wrapper (a tag placed around its
    parent's whole content) half a level above its own depth; a tag without words is held
    by its ancestors and wrappers, never by a tag it merely touches."""
    ancestry: list[set[int]] = []
    for element in elements:
        parent = element.parent
        ancestry.append(set() if parent is None else ancestry[parent] | {parent})
    depth = [len(above) - 0.5 * (index in wrappers) for index, above in enumerate(ancestry)]

    def inner(other: int) -> tuple:
        return places[other][1] - places[other][0], -depth[other], -other

    def holds(other: int, index: int) -> bool:
        (start, end), (low, high) = places[index], places[other]
        if start == end and other not in ancestry[index] and other not in wrappers:
            return low < start < high
        return low <= start and end <= high

    parents: list[int | None] = []
    for index in range(len(elements)):
        holders = [
            other for other in range(len(elements))
            if other != index and index not in ancestry[other]
            and holds(other, index) and inner(other) > inner(index)
        ]  # fmt: skip
        parents.append(min(holders, key=inner, default=None))
    return parents


def _padding(sentence: Sentence, target: str, places) -> dict[int, tuple[str, str]]:
    """A space after a void or verbatim element that stood between spaces in the source and
    now stands at the start of a word (before it, at the end of one)."""
    padding = {}
    source = sentence.text
    for index, element in enumerate(sentence.elements):
        at = element.start
        before, after = source[at - 1 : at] if at else " ", source[at : at + 1] or " "
        spaced = before.isspace() and after.isspace()
        if element.close is None and spaced:
            point = places[index][0]
            if point == 0 or target[point - 1].isspace():
                padding[index] = ("", " ")  # at the start of a word
            elif point == len(target) or target[point].isspace():
                padding[index] = (" ", "")  # at the end of one
    return padding


class _Placer:
    """Each element's target characters, from the words aligned to the words it wrapped."""

    def __init__(self, sentence, source_words, target, target_words, aligned):
        self.sentence, self.source_words = sentence, source_words
        self.target, self.target_words = target, target_words
        self.aligned, self.length = aligned, len(target)
        self.source_starts = [start for start, _ in source_words]
        self.spans: dict[int, tuple[int, int]] = {}  # element -> target words [first, last)
        self.wrappers: set[int] = set()  # elements placed around their parent's whole span

    def places(self) -> dict[int, tuple[int, int]]:
        places = {}
        for index, element in enumerate(self.sentence.elements):
            if element.holds_words and self._text(element).strip():
                first, last = self._span(index, element)
                places[index] = self._characters(element, first, last)
            else:
                point = self._point(index, element)
                places[index] = (point, point)
        return self._nested(places)

    def _text(self, element: Element) -> str:
        return self.sentence.text[element.start : element.end]

    def _parent_span(self, element: Element) -> tuple[int, int]:
        if element.parent is None:
            return 0, len(self.target_words)
        return self.spans.get(element.parent, (0, len(self.target_words)))

    def _source_words(self, element: Element) -> list[int]:
        return [
            i for i, (start, end) in enumerate(self.source_words)
            if start < element.end and end > element.start
        ]  # fmt: skip

    def _span(self, index: int, element: Element) -> tuple[int, int]:
        low, high = self._parent_span(element)
        targets = [j for i in self._source_words(element) for j in self.aligned.get(i, [])]
        targets = [j for j in targets if low <= j < high]
        if targets:
            span = min(targets), max(targets) + 1
            if all(self._fits(span, other) for other in self._others(element)):
                self.spans[index] = span
                return span
        self.spans[index] = (low, high)
        self.wrappers.add(index)
        return low, high

    def _others(self, element: Element):
        """The spans already placed that the element must not cross: all but its
        ancestors' and the wrappers' (which enclose their parent's whole span)."""
        ancestors = set()
        parent = element.parent
        while parent is not None:
            ancestors.add(parent)
            parent = self.sentence.elements[parent].parent
        return [
            span for other, span in self.spans.items()
            if other not in ancestors and other not in self.wrappers
        ]  # fmt: skip

    @staticmethod
    def _fits(span: tuple[int, int], other: tuple[int, int]) -> bool:
        return span[1] <= other[0] or other[1] <= span[0]

    def _characters(self, element: Element, first: int, last: int) -> tuple[int, int]:
        """Words [first, last) as characters, without the punctuation at either end unless the
        source tag held punctuation there ("<b>Hund</b>," gives "<b>dog</b>,")."""
        if first >= last:  # a sentence translated to nothing
            return self.length, self.length
        start, end = self.target_words[first][0], self.target_words[last - 1][1]
        held = self._text(element).strip()
        if not PUNCTUATION_BEFORE.search(held):
            start += punctuation_edge(PUNCTUATION_BEFORE, self.target[start:end])
        if not PUNCTUATION_AFTER.search(held):
            end -= punctuation_edge(PUNCTUATION_AFTER, self.target[start:end])
        return start, end

    def _point(self, index: int, element: Element) -> int:
        """Where an element without words goes: before the target word aligned to the source
        word after it, else after the one aligned to the word before (first, where it was
        glued to the word before and not to the one after); inside its parent's words and
        no other tag's."""
        if not self.target_words:
            return self.length
        low, high = self._parent_span(element)
        after = bisect.bisect_left(self.source_starts, element.start)
        text, at = self.sentence.text, element.start
        glued_before = at > 0 and not text[at - 1].isspace()  # "word</b> next"
        glued_after = at < len(text) and not text[at].isspace()
        next_word = after < len(self.source_words) and self.aligned.get(after)
        word_before = after > 0 and self.aligned.get(after - 1)
        if next_word and not (glued_before and not glued_after and word_before):
            word, at_end = min(self.aligned[after]), False
        elif word_before:
            word, at_end = max(self.aligned[after - 1]), True
        else:  # no aligned neighbour: the same share of the way through the words
            share = after / max(len(self.source_words), 1)
            word, at_end = round(share * len(self.target_words)), False
        if word < low:
            word, at_end = low, False
        if word >= high:
            word, at_end = high - 1, True
        for first, last in self._others(element):
            if first <= word < last and not (word == first and not at_end):
                word, at_end = last - 1, True  # after the tag it would have fallen into
        start, end = self.target_words[word]
        return end if at_end else start

    def _nested(self, places: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
        """Each element's characters inside its parent's (punctuation moved out can make a
        child reach past its parent)."""
        for index, element in enumerate(self.sentence.elements):
            if element.parent is not None:
                low, high = places[element.parent]
                start, end = places[index]
                start, end = min(max(start, low), high), min(max(end, low), high)
                places[index] = (start, max(start, end))
        return places
