"""Plain text, HTML and XML files: HTML and XML read by html.parser as markup translation
reads a line (nmt/data/markup/), the whole file at once so that a paragraph may span
lines; plain text a paragraph a line. An HTML page's text that readers see in attributes
(TRANSLATED_ATTRIBUTES: alt, title, placeholder, aria-label) is translated too, each
value a segment of its own, unless its element or one around it says not to
(translate="no")."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from typing import TYPE_CHECKING

from nmt.data.markup import VERBATIM, VOID, MarkupError, parse, says_untranslated
from nmt.documents.errors import DocumentError, decoded
from nmt.documents.segments import Segment, Translate

if TYPE_CHECKING:
    from nmt.documents.formats import Settings


def translate_text(data: bytes, translate: Translate, settings: Settings) -> bytes:
    """Each line a paragraph (its sentences cut apart), line ends kept."""
    lines = decoded(data).splitlines(keepends=True)
    bodies = [line.rstrip("\r\n") for line in lines]
    translated = translate([Segment(body, "text") for body in bodies])
    ends = [line[len(body) :] for line, body in zip(lines, bodies, strict=True)]
    return "".join(t + end for t, end in zip(translated, ends, strict=True)).encode("utf-8")


TRANSLATED_ATTRIBUTES = ("alt", "title", "placeholder", "aria-label")


def translate_html(data: bytes, translate: Translate, settings: Settings) -> bytes:
    return _whole(data, translate, "html", _with_attributes_translated)


def translate_xml(data: bytes, translate: Translate, settings: Settings) -> bytes:
    return _whole(data, translate, "xml")


def _whole(data: bytes, translate: Translate, kind, attributes=None) -> bytes:
    text = decoded(data)
    try:
        parse(text, kind)  # XML's errors, named by line and column before anything runs
    except MarkupError as error:
        raise DocumentError(str(error)) from None
    if attributes is not None:
        text = attributes(text, translate)
    (translated,) = translate([Segment(text, kind)])
    return translated.encode("utf-8")


class _Values(HTMLParser):
    """The spans [start, end) of the values of TRANSLATED_ATTRIBUTES in a page's tags, but
    in and inside an element whose content is not translated (translate="no", the class
    "notranslate", code and its kin): HTML's translate holds for what an element holds."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=False)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.text, self.spans = text, []
        self.untranslated: list[str] = []  # the elements open since an untranslated one
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag(tag, attrs, closes_itself=False)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag(tag, attrs, closes_itself=True)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.untranslated:  # closing it closes what opened inside it, left open
            while self.untranslated.pop() != tag:
                pass

    def _tag(self, tag: str, attrs: list[tuple[str, str | None]], closes_itself: bool) -> None:
        untranslated = bool(self.untranslated) or tag in VERBATIM or says_untranslated(dict(attrs))
        if untranslated and not closes_itself and tag not in VOID:
            self.untranslated.append(tag)
        if untranslated:
            return
        line, column = self.getpos()
        start = self.line_starts[line - 1] + column
        raw = self.get_starttag_text() or ""
        for name in TRANSLATED_ATTRIBUTES:
            found = re.search(rf"""\s{name}\s*=\s*(?:"([^"]*)"|'([^']*)')""", raw, re.IGNORECASE)
            if found:
                group = 1 if found.group(1) is not None else 2
                self.spans.append((start + found.start(group), start + found.end(group)))


def _with_attributes_translated(text: str, translate: Translate) -> str:
    """`text` with each TRANSLATED_ATTRIBUTES value translated (as plain text, escaped back
    for its quotes)."""
    spans = sorted(_Values(text).spans)
    values = [html.unescape(text[start:end]) for start, end in spans]
    translated = translate([Segment(value, "text", escaped=False) for value in values])
    pieces, at = [], 0
    for (start, end), value in zip(spans, translated, strict=True):
        pieces += [text[at:start], html.escape(value, quote=True)]
        at = end
    return "".join([*pieces, text[at:]])
