"""The parts of a marked-up line (nmt/data/markup/): the kinds of tags, the elements and
sentences `parse` makes of them, and writing a sentence back with its elements placed."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

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


def says_untranslated(attrs: dict[str, str | None]) -> bool:
    """An element's own word that its content is not to be translated: translate="no"
    (its:translate="no" in XML) or the class "notranslate"."""
    untranslated = attrs.get("translate") == "no" or attrs.get("its:translate") == "no"
    return untranslated or "notranslate" in (attrs.get("class") or "").split()


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
        return rendered(self.text, self.elements, places, escaped=self.escaped)


Part = str | Sentence  # a document is copied text and sentences, in order


def word_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def punctuation_edge(pattern: re.Pattern, text: str) -> int:
    """How many characters of punctuation `pattern` finds at an edge of `text`, unless they
    are all of it."""
    match = pattern.search(text)
    return len(match.group()) if match and len(match.group()) < len(text) else 0


def rendered(
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
