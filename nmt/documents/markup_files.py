"""Plain text, HTML and XML files: HTML and XML read by html.parser as markup translation
reads a line (nmt/data/markup/), the whole file at once so that a paragraph may span
lines; plain text a paragraph a line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nmt.data.markup import MarkupError, parse
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


def translate_html(data: bytes, translate: Translate, settings: Settings) -> bytes:
    return _whole(data, translate, "html")


def translate_xml(data: bytes, translate: Translate, settings: Settings) -> bytes:
    return _whole(data, translate, "xml")


def _whole(data: bytes, translate: Translate, kind) -> bytes:
    text = decoded(data)
    try:
        parse(text, kind)  # XML's errors, named by line and column before anything runs
    except MarkupError as error:
        raise DocumentError(str(error)) from None
    (translated,) = translate([Segment(text, kind)])
    return translated.encode("utf-8")
