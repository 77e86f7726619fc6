"""Reading a marked-up line into copied parts and sentences (`parse`), and the text a
reader sees (`plain`)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser

from nmt.data.markup.elements import (
    INLINE,
    LINE_BREAKS,
    RAW,
    VERBATIM,
    VOID,
    Element,
    MarkupError,
    MarkupKind,
    Part,
    Sentence,
    says_untranslated,
)


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


def plain(text: str, kind: MarkupKind = "html") -> str:
    """The text a reader sees: tags out, references decoded."""
    return "".join(
        part if isinstance(part, str) and not part.lstrip().startswith("<") else ""
        for part in _plain_parts(parse(text, kind))
    )


def _plain_parts(parts: Sequence[Part]) -> list[str]:
    return [part.text if isinstance(part, Sentence) else part for part in parts]


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
        if text.lstrip().startswith("<?xml"):  # a whole document, not a line's markup
            _structural(tokens)
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
    untranslated = says_untranslated(attrs)
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


def _structural(tokens: list[_Token]) -> None:
    """An XML document (one that opens with its declaration) names no blocks, so its
    structure decides: an element whose parent holds text
    of its own (mixed content: a paragraph's) is inline; one whose parent holds only
    elements and spaces (a document's sections, a list's items) is a block, which ends a
    sentence, and so is an empty element there. Changes the tokens' kinds in place; what a
    verbatim element holds stays as it is."""
    frames: list[list] = [[None, False]]  # per open element: its open token, holds text
    elements: list[tuple[int, int | None, list]] = []  # open, close (None: void), parent
    verbatim = 0  # depth inside a verbatim element
    for index, token in enumerate(tokens):
        closing = token.kind in ("close", "block") and token.raw.startswith("</")
        if verbatim:
            verbatim += (token.kind in ("open", "verbatim_open")) - closing
            continue
        if token.kind == "verbatim_open":
            verbatim = 1
        elif token.kind == "open":
            frames.append([index, False])
        elif closing:
            opened, _ = frames.pop()
            elements.append((opened, index, frames[-1]))
        elif token.kind == "void":
            elements.append((index, None, frames[-1]))
        elif token.kind == "text" and token.raw.strip():
            frames[-1][1] = True
    for opened, closed, parent in elements:
        if not parent[1]:
            tokens[opened].kind = "block"
            if closed is not None:
                tokens[closed].kind = "block"


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
