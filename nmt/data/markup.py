"""Inline markup through translation: a line of HTML or XML cut into the plain sentences a
model reads and the tags around their words; after translation each tag is put back around
the target words that the model's word alignments tie to the source words it wrapped, as
bergamot-translator does for Firefox's translations.

How each tag is treated (in XML every element is inline but those marked not to translate):
  inline    a, b, em, span, strong, ...: inside a sentence; around the target words aligned
            to the source words it wrapped
  void      br, img, wbr, ... (or any <x/>): no words; before the target word aligned to the
            source word after it (after the one aligned to the word before, at the end)
  verbatim  code, kbd, samp, var, an element with translate="no" or class "notranslate", a
            comment, or an element around no words: copied untouched, placed like a void tag
  block     p, div, li, h1, td, ...: ends a sentence; copied as it is
  raw       pre, script, style, textarea, a declaration: copied untouched between sentences
A tag whose words have no aligned target word, or whose place would cross a tag placed
before it, wraps everything inside its parent instead (the whole sentence at the top): the
output always holds each tag of the source once, each inside the tags it was inside. A tag
the source never closes (or closes out of order) is copied where it stood, as a block tag.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Literal

from nmt.data import markup_augment

MarkupKind = Literal["html", "xml", "text"]  # text: no tags, only placeholders

INLINE = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "cite", "data", "del", "dfn", "em", "font", "i", "ins",
    "label", "mark", "q", "ruby", "s", "small", "span", "strong", "sub", "sup", "time", "u",
    "big", "tt", "strike", "nobr",
})  # fmt: skip
VOID = frozenset({"br", "img", "wbr", "input", "embed", "source", "track", "area", "col"})
LINE_BREAKS = frozenset({"br"})  # void, and in HTML a space between the words around it
VERBATIM = frozenset({"code", "kbd", "samp", "var", "math", "svg"})
RAW = frozenset({"pre", "script", "style", "textarea", "template", "noscript", "iframe"})
# what an HTML element not named above is: a block, which ends a sentence

# What comes out exactly as it went in: held out of the sentences by `parse(keep=...)`.
_URL_END = r"[^\s<>\"'.,;:!?)\]}]"  # a URL's last character: not the sentence's punctuation
_UNITS = (
    r"%|‰|°[CF]?|[kMGT]i?B|[kMG]?Hz|[kM]?W|kWh|mA?h|[kcm]?m|km/h|mph|mm|[mk]?g|ml|cl|min"
    r"|ms|ns|px|pt|em|rem|ft|lbs?|oz|kcal|€|\$|£|¥"
)
PLACEHOLDERS = re.compile(
    "|".join([
        rf"(?:https?|ftp)://[^\s<>\"']*{_URL_END}",  # URLs
        rf"\bwww\.[^\s<>\"']*{_URL_END}",
        r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",  # e-mail addresses
        r"\{\{.*?\}\}|\{%.*?%\}|\$\{\w+\}",  # {{ var }}, {% tag %}, ${var}
        r"\{\w*(?:[.\[\]\w]*)(?:![rsa])?(?::[^{}\s]*)?\}",  # {count}, {0}, {name:>10}
        r"%(?:\(\w+\)|\d+\$)?[-+#0]*\d*(?:\.\d+)?[diouxXeEfFgGcsr@]",  # %s, %(n)d, %1$s
        rf"(?<![\w.,])[-+]?\d+(?:[.,]\d+)*\s?(?:{_UNITS})(?!\w)",  # numbers with units
        r"[€$£¥]\s?\d+(?:[.,]\d+)*",
    ])
)  # fmt: skip


def kept(patterns: Sequence[str] = ()) -> re.Pattern:
    """PLACEHOLDERS with a user's own regular expressions first (`--keep`)."""
    return re.compile("|".join([*(f"(?:{p})" for p in patterns), PLACEHOLDERS.pattern]))


PUNCTUATION_BEFORE, PUNCTUATION_AFTER = re.compile(r"^[^\w\s]+"), re.compile(r"[^\w\s]+$")


class MarkupError(ValueError):
    """XML that is not well-formed: `line` and `column` (1-based) say where."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(f"line {line}, column {column}: {message}")
        self.line, self.column = line, column


@dataclass
class Element:
    """A tag inside a sentence: `open` and `close` as written (`close` None: void or
    verbatim, whose whole text `open` holds), over the sentence's plain characters
    [start, end) (start == end: it holds no words; a line break holds the space it stands
    for in the plain text)."""

    name: str
    open: str
    close: str | None
    start: int
    end: int
    parent: int | None  # index of the enclosing element in the sentence's list (pre-order)

    @property
    def holds_words(self) -> bool:
        return self.close is not None and self.end > self.start


@dataclass
class Sentence:
    """What a model translates (`text`, plain, tags out and references decoded) and the
    tags around its words, in document order; `escaped`: text is written back with `&`, `<`
    and `>` escaped (markup), or as it is (plain text)."""

    text: str
    elements: list[Element] = field(default_factory=list)
    escaped: bool = True

    def render(self) -> str:
        """The sentence as it was read, tags and all."""
        places = {i: (e.start, e.end) for i, e in enumerate(self.elements)}
        return _render(self.text, self.elements, places, escaped=self.escaped)


Part = str | Sentence  # a document is copied text and sentences, in order


def parse(
    text: str,
    kind: MarkupKind = "html",
    split: Callable[[str], list[str]] | None = None,
    keep: re.Pattern | None = None,
    escaped: bool | None = None,
) -> list[Part]:
    """`text` as copied parts and sentences (`split`: a paragraph's plain text -> its
    sentences, whose concatenation is the text; None: a paragraph is one sentence). What
    `keep` matches in the text (PLACEHOLDERS, say) is held out of the sentences and copied
    untouched, placed as a verbatim element is. `escaped`: whether text holds references
    (`&amp;`) and is written back escaped; None: in HTML and XML, not in plain text (a
    subtitle's tags come without references)."""
    tokens = _held(_tokens(text, kind), keep)
    escaped = kind != "text" if escaped is None else escaped
    parts: list[Part] = []
    for run in _balanced_runs(tokens):
        if isinstance(run, str):
            parts.append(run)
        else:
            parts.extend(_sentences(run, split, escaped))
    return _merged(parts)


def render(parts: Sequence[Part]) -> str:
    """The text of parts whose sentences are rendered as they are."""
    return "".join(part if isinstance(part, str) else part.render() for part in parts)


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
    source_words, target_words = _words(sentence.text), _words(target)
    aligned: dict[int, list[int]] = {}
    for i, j in alignment:
        if 0 <= i < len(source_words) and 0 <= j < len(target_words):
            aligned.setdefault(i, []).append(j)
    placer = _Placer(sentence, source_words, target, target_words, aligned)
    places = placer.places()
    parents = _output_parents(sentence.elements, places, placer.wrappers)
    padding = _padding(sentence, target, places)
    return _render(target, sentence.elements, places, parents, padding, sentence.escaped)


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


def plain(text: str, kind: MarkupKind = "html") -> str:
    """The text a reader sees: tags out, references decoded."""
    return "".join(
        part if isinstance(part, str) and not part.lstrip().startswith("<") else ""
        for part in _plain_parts(parse(text, kind))
    )


def _plain_parts(parts: Sequence[Part]) -> list[str]:
    return [part.text if isinstance(part, Sentence) else part for part in parts]


# -- reading ---------------------------------------------------------------------------


@dataclass
class _Token:
    kind: str  # "text", "open", "close", "void", "line_break", "verbatim", "block", "raw"
    raw: str
    name: str = ""


class _Reader(HTMLParser):
    """Each token of the text with its exact source characters."""

    def __init__(self, text: str, kind: MarkupKind):
        super().__init__(convert_charrefs=False)
        self.text, self.markup = text, kind
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.events: list[tuple[int, str, str, dict[str, str | None]]] = []
        self.feed(text)
        self.close()

    def _at(self) -> int:
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def handle_starttag(self, tag, attrs):
        self.events.append((self._at(), "open", tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.events.append((self._at(), "void", tag, dict(attrs)))

    def handle_endtag(self, tag):
        self.events.append((self._at(), "close", tag, {}))

    def handle_data(self, data):
        self.events.append((self._at(), "text", "", {}))

    handle_entityref = handle_charref = handle_data

    def handle_comment(self, data):
        self.events.append((self._at(), "verbatim", "", {}))

    def handle_decl(self, decl):
        self.events.append((self._at(), "raw", "", {}))

    handle_pi = unknown_decl = handle_decl


def _tokens(text: str, kind: MarkupKind) -> list[_Token]:
    if kind == "text":
        return [_Token("text", text)]
    reader = _Reader(text, kind)
    starts = [at for at, *_ in reader.events] + [len(text)]
    tokens = []
    for index, (at, event, name, attrs) in enumerate(reader.events):
        raw = text[at : starts[index + 1]]
        if event == "open" and kind == "xml" and raw.endswith("/>"):
            event = "void"
        tokens.append(_Token(_kind(event, name, attrs, kind), raw, name))
    if kind == "xml":
        _check_nesting(tokens, text)
    return _enclosed(tokens)


def _held(tokens: list[_Token], keep: re.Pattern | None) -> list[_Token]:
    """Neighbouring text tokens as one (a reference parts the parser's), and what `keep`
    matches in them as verbatim tokens."""
    merged: list[_Token] = []
    for token in tokens:
        if token.kind == "text" and merged and merged[-1].kind == "text":
            merged[-1] = _Token("text", merged[-1].raw + token.raw)
        else:
            merged.append(token)
    if keep is None:
        return merged
    held: list[_Token] = []
    for token in merged:
        if token.kind != "text":
            held.append(token)
            continue
        at = 0
        for match in keep.finditer(token.raw):
            if match.end() > match.start():
                held.extend([_Token("text", token.raw[at : match.start()]),
                             _Token("verbatim", match.group(), "placeholder")])  # fmt: skip
                at = match.end()
        held.append(_Token("text", token.raw[at:]))
    return [token for token in held if token.raw]


def _kind(event: str, name: str, attrs: dict[str, str | None], kind: MarkupKind) -> str:
    untranslated = attrs.get("translate") == "no" or attrs.get("its:translate") == "no"
    untranslated |= "notranslate" in (attrs.get("class") or "").split()
    if event in ("text", "verbatim", "raw"):
        return event
    if kind == "xml":
        if event == "open" and untranslated:
            return "verbatim_open"
        return event
    if event == "close":
        return "close" if name in INLINE or name in VERBATIM or name in RAW else "block"
    if name in RAW:
        return "raw_open" if event == "open" else "raw"
    if name in LINE_BREAKS:
        return "line_break"
    if event == "void" or name in VOID:
        return "void" if name in VOID or name in INLINE or name in VERBATIM else "block"
    if name in VERBATIM or untranslated:
        return "verbatim_open"
    return "open" if name in INLINE else "block"


def _enclosed(tokens: list[_Token]) -> list[_Token]:
    """A raw or verbatim element's whole text as one token of its kind (raw: between
    sentences; verbatim: inside one)."""
    merged: list[_Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.kind not in ("raw_open", "verbatim_open"):
            merged.append(token)
            index += 1
            continue
        depth, end = 0, index
        for end in range(index, len(tokens)):
            other = tokens[end]
            if other.name == token.name and other.kind in ("raw_open", "verbatim_open", "open"):
                depth += 1
            elif other.name == token.name and other.kind in ("close", "block"):
                depth -= 1
                if depth == 0:
                    break
        raw = "".join(t.raw for t in tokens[index : end + 1])
        merged.append(_Token("raw" if token.kind == "raw_open" else "verbatim", raw, token.name))
        index = end + 1
    return merged


def _check_nesting(tokens: list[_Token], text: str) -> None:
    """XML's rule: every element closed, in order."""
    stack: list[tuple[str, int]] = []
    offset = 0
    for token in tokens:
        if token.kind in ("open", "verbatim_open", "raw_open"):
            stack.append((token.name, offset))
        elif token.kind in ("close", "block") and token.raw.startswith("</"):
            if not stack or stack[-1][0] != token.name:
                expected = f"</{stack[-1][0]}>" if stack else "no end tag"
                raise MarkupError(f"{token.raw.strip()} where {expected} was expected",
                                  *_position(text, offset))  # fmt: skip
            stack.pop()
        offset += len(token.raw)
    if stack:
        name, at = stack[-1]
        raise MarkupError(f"<{name}> is never closed", *_position(text, at))


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _balanced_runs(tokens: list[_Token]) -> list[str | list[_Token]]:
    """Copied text and runs of text and inline tags between them, each run's tags balanced:
    a tag without its partner in the run is copied where it stood, splitting the run."""
    runs: list[str | list[_Token]] = []
    current: list[_Token] = []
    for token in tokens:
        if token.kind in ("block", "raw"):
            runs.extend([current, token.raw])
            current = []
        else:
            current.append(token)
    runs.append(current)
    while True:
        split = []
        changed = False
        for run in runs:
            if isinstance(run, str):
                split.append(run)
                continue
            unmatched = _unmatched(run)
            if not unmatched:
                split.append(run)
                continue
            changed = True
            start = 0
            for index in sorted(unmatched):
                split.extend([run[start:index], run[index].raw])
                start = index + 1
            split.append(run[start:])
        runs = split
        if not changed:
            return [run for run in runs if run]


def _unmatched(run: list[_Token]) -> set[int]:
    stack: list[int] = []
    unmatched: set[int] = set()
    for index, token in enumerate(run):
        if token.kind == "open":
            stack.append(index)
        elif token.kind == "close":
            if stack and run[stack[-1]].name == token.name:
                stack.pop()
            else:
                unmatched.add(index)
    return unmatched | set(stack)


def _sentences(
    run: list[_Token], split: Callable[[str], list[str]] | None, escaped: bool
) -> list[Part]:
    """A balanced run as sentences: its plain text cut by `split`, never inside a tag that
    holds words."""
    whole = Sentence("", escaped=escaped)
    stack: list[int] = []
    text: list[str] = []
    length = 0
    for token in run:
        if token.kind == "text":
            decoded = html.unescape(token.raw) if escaped else token.raw
            text.append(decoded)
            length += len(decoded)
            continue
        parent = stack[-1] if stack else None
        if token.kind == "open":
            stack.append(len(whole.elements))
            whole.elements.append(Element(token.name, token.raw, "", length, length, parent))
        elif token.kind == "close":
            element = whole.elements[stack.pop()]
            element.close, element.end = token.raw, length
        else:  # void, verbatim; a line break parts the words around it, as a space
            gap = " " if token.kind == "line_break" else ""
            whole.elements.append(
                Element(token.name, token.raw, None, length, length + len(gap), parent)
            )
            text.append(gap)
            length += len(gap)
    whole.text = "".join(text)
    cuts = _cuts(whole, split)
    return [_slice(whole, start, end) for start, end in zip(cuts, cuts[1:], strict=False)]


def _cuts(whole: Sentence, split: Callable[[str], list[str]] | None) -> list[int]:
    cuts = [0]
    if split is not None and whole.text.strip():
        for piece in split(whole.text)[:-1]:
            cut = cuts[-1] + len(piece)
            inside = any(e.holds_words and e.start < cut < e.end for e in whole.elements)
            if not inside and whole.text[cuts[-1] : cut].strip():
                cuts.append(cut)
    return [*cuts, len(whole.text)]


def _slice(whole: Sentence, start: int, end: int) -> Sentence:
    """The sentence of characters [start, end) with the elements that lie in it (a zero-width
    element at a cut goes with the sentence before, at the very start with the first)."""
    kept: dict[int, int] = {}
    sentence = Sentence(whole.text[start:end], escaped=whole.escaped)
    for index, element in enumerate(whole.elements):
        inside = start <= element.start and element.end <= end
        at_cut = element.start == element.end == start and start > 0
        if inside and not at_cut:
            parent = kept.get(element.parent) if element.parent is not None else None
            kept[index] = len(sentence.elements)
            sentence.elements.append(
                Element(
                    element.name,
                    element.open,
                    element.close,
                    element.start - start,
                    element.end - start,
                    parent,
                )  # fmt: skip
            )
    return sentence


def _merged(parts: list[Part]) -> list[Part]:
    """Neighbouring copied texts as one; sentences without words as copied text."""
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, Sentence) and not part.text.strip():
            part = part.render()
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        elif part != "":
            merged.append(part)
    return merged


# -- placing ---------------------------------------------------------------------------


def _words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


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
            start += _edge(PUNCTUATION_BEFORE, self.target[start:end])
        if not PUNCTUATION_AFTER.search(held):
            end -= _edge(PUNCTUATION_AFTER, self.target[start:end])
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


def _edge(pattern: re.Pattern, text: str) -> int:
    """How many characters of punctuation `pattern` finds at an edge of `text`, unless they
    are all of it."""
    match = pattern.search(text)
    return len(match.group()) if match and len(match.group()) < len(text) else 0


# -- writing ---------------------------------------------------------------------------


def _render(
    text: str,
    elements: list[Element],
    places: dict[int, tuple[int, int]],
    parents: Sequence[int | None] | None = None,
    padding: dict[int, tuple[str, str]] | None = None,
    escaped: bool = True,
) -> str:
    """`text` with each element at its place, inside its parent (`parents`; None: the
    source's); `padding`: spaces around an element that holds no words, where the source
    had them and the translation's words have only one."""
    padding = padding or {}
    parents = parents if parents is not None else [element.parent for element in elements]

    def written(piece: str) -> str:
        return html.escape(piece, quote=False) if escaped else piece

    children: dict[int | None, list[int]] = {}
    for index, parent in enumerate(parents):
        children.setdefault(parent, []).append(index)

    def inside(parent: int | None, start: int, end: int) -> str:
        out, at = [], start
        order = sorted(
            children.get(parent, []), key=lambda i: (places[i][0], places[i][1] > places[i][0], i)
        )
        for index in order:
            first, last = places[index]
            first = max(first, at)
            out.append(written(text[at:first]))
            element = elements[index]
            before, after = padding.get(index, ("", ""))
            if element.close is None:  # in the source, a line break's space is its own
                out.append(before + element.open + after)
                at = max(first, last)
            else:
                out.append(element.open + inside(index, first, max(first, last)) + element.close)
                at = max(first, last)
        out.append(written(text[at:end]))
        return "".join(out)

    return inside(None, 0, len(text))


# -- the model's own tags (a model trained with data.markup_augment) ---------------------


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
    words = _words(sentence.text)
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
    bounds = _words(target)
    places = {}
    for index, element in enumerate(sentence.elements):
        if index in spans:
            first, last = spans[index]
            start, end = bounds[first][0], bounds[last - 1][1]
            held = sentence.text[element.start : element.end].strip()
            if not PUNCTUATION_BEFORE.search(held):
                start += _edge(PUNCTUATION_BEFORE, target[start:end])
            if not PUNCTUATION_AFTER.search(held):
                end -= _edge(PUNCTUATION_AFTER, target[start:end])
            places[index] = (start, end)
        else:
            word = before[void]
            point = bounds[word][0] if word < len(bounds) else len(target)
            places[index] = (point, point)
    parents = [element.parent for element in sentence.elements]
    return _render(target, sentence.elements, places, parents, None, sentence.escaped)


def _apart(one: tuple[int, int], other: tuple[int, int]) -> bool:
    return one[1] <= other[0] or other[1] <= one[0]
