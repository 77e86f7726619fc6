"""Markdown (.md), read by markdown-it-py (CommonMark, with tables and strikethrough). The
text of each paragraph, heading and table cell is translated with its emphasis, strong,
strikethrough and links as tags; code spans, images, autolinks and inline HTML are copied
untouched where the alignments place them, and a link's target is kept as written. Code
blocks, fences, HTML blocks, thematic breaks and every line marker (`#`, `>`, `-`, `1.`,
indentation, a setext heading's underline) stay as they were; a paragraph's lines become
one line (its hard breaks kept), and a table row's cells are written back between pipes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from markdown_it import MarkdownIt

from nmt.documents.errors import decoded
from nmt.documents.segments import Segment, Translate

if TYPE_CHECKING:
    from markdown_it.token import Token

    from nmt.documents.formats import Settings

PAIRS = {"strong": "b", "em": "i", "s": "s"}  # markdown-it's token names: our tags
SPECIAL = re.compile(r"([\\`*_\[\]])")  # what would start Markdown of its own in text
MARKER = re.compile(r"[-*+]|\d{1,9}[.)]")  # a list item's marker, in a line's prefix
# a line as markdown-it numbers them: ended by \n, \r\n or \r alone (str.splitlines also
# breaks at \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029, which would shift every later block)
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
NOT_IN_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # copied as it stood


def translate_markdown(data: bytes, translate: Translate, settings: Settings) -> bytes:
    text = decoded(data)
    lines = LINE.findall(text)
    parser = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    parser.normalizeLink = lambda url: url  # a link's target as written, not percent-encoded
    units = _units(parser.parse(text))
    inlines = [inline for _, cells in units for inline in cells]
    marked = [_marked(inline) for inline in inlines]
    translated = translate([Segment(markup, "xml") for markup, _ in marked])
    written = iter(
        _markdown(translation, kept)
        for translation, (_, kept) in zip(translated, marked, strict=True)
    )
    for kind, cells in units:
        first, last = cells[0].map
        if kind == "row":
            lines[first] = _row(lines[first], [next(written) for _ in cells])
        else:
            _replace(lines, first, last, cells[0].content, next(written))
    return "".join(lines).encode("utf-8")


def _units(tokens: list[Token]) -> list[tuple[str, list[Token]]]:
    """("block", [inline]) for each paragraph and heading, ("row", [inline per cell]) for
    each table row, in order."""
    units: list[tuple[str, list[Token]]] = []
    in_row = False
    for token in tokens:
        if token.type == "tr_open":
            in_row = True
            units.append(("row", []))
        elif token.type == "tr_close":
            in_row = False
        elif token.type == "inline" and token.map is not None:
            if in_row:
                units[-1][1].append(token)
            else:
                units.append(("block", [token]))
    return [(kind, cells) for kind, cells in units if cells]


def _marked(inline: Token) -> tuple[str, list[str]]:
    """The inline's markup for translation: emphasis and links as tags, what is copied
    untouched as <x k="n"/> (kept[n] its Markdown), text escaped as XML."""
    out: list[str] = []
    kept: list[str] = []

    def verbatim(markdown: str) -> None:
        out.append(f'<x k="{len(kept)}"/>')
        kept.append(markdown)

    def text(content: str) -> None:
        start = 0
        for match in NOT_IN_XML.finditer(content):
            out.append(escape(content[start : match.start()]))
            verbatim(match[0])
            start = match.end()
        out.append(escape(content[start:]))

    children = iter(inline.children or [])
    for child in children:
        kind = child.type
        if kind == "text":
            text(child.content)
        elif kind == "softbreak":
            out.append(" ")
        elif kind == "hardbreak":
            verbatim("\\\n")
        elif kind.endswith("_open") and kind[: -len("_open")] in PAIRS:
            out.append(f'<{PAIRS[kind[: -len("_open")]]} m="{escape(child.markup)}">')
        elif kind.endswith("_close") and kind[: -len("_close")] in PAIRS:
            out.append(f"</{PAIRS[kind[: -len('_close')]]}>")
        elif kind == "link_open" and child.info == "auto":
            verbatim(f"<{child.attrs['href']}>")
            for inner in children:  # its text is its target
                if inner.type == "link_close":
                    break
        elif kind == "link_open":
            title = child.attrs.get("title")
            target = str(child.attrs["href"]) + (f' "{title}"' if title else "")
            out.append(f'<a k="{len(kept)}">')
            kept.append(target)
        elif kind == "link_close":
            out.append("</a>")
        elif kind == "code_inline":
            verbatim(f"{child.markup}{child.content}{child.markup}")
        elif kind == "image":
            title = child.attrs.get("title")
            target = str(child.attrs["src"]) + (f' "{title}"' if title else "")
            verbatim(f"![{child.content}]({target})")
        else:  # html_inline and what else a plugin may add
            verbatim(child.content)
    return "".join(out), kept


def _markdown(translation: str, kept: list[str]) -> str:
    """A translated inline's Markdown from its markup."""
    root = ElementTree.fromstring(f"<r>{translation}</r>")

    def written(node) -> str:
        out = [SPECIAL.sub(r"\\\1", node.text or "")]
        for child in node:
            if child.tag == "x":
                out.append(kept[int(child.get("k"))])
            elif child.tag == "a":
                out.append(f"[{written(child)}]({kept[int(child.get('k'))]})")
            else:
                mark = child.get("m")
                out.append(f"{mark}{written(child)}{mark}")
            out.append(SPECIAL.sub(r"\\\1", child.tail or ""))
        return "".join(out)

    return written(root)


def _replace(lines: list[str], first: int, last: int, content: str, written: str) -> None:
    """Lines [first, last) of a block whose inline source is `content` now hold `written`:
    the first line keeps what stood before and after its content (markers, a closing ###),
    the others are gone; a hard break goes on as the block's lines went on."""
    line = lines[first]
    head = content.split("\n")[0]
    at = line.find(head) if head else len(line.rstrip("\r\n"))
    at = at if at >= 0 else len(line) - len(line.lstrip())
    prefix = line[:at]
    if last - first == 1:
        suffix = line[at + len(head) :]
    else:
        suffix = lines[last - 1][len(lines[last - 1].rstrip("\r\n")) :]
    going_on = MARKER.sub(lambda marker: " " * len(marker.group()), prefix)
    lines[first] = prefix + written.replace("\\\n", "\\\n" + going_on) + suffix
    for index in range(first + 1, last):
        lines[index] = ""


def _row(line: str, cells: list[str]) -> str:
    """A table row's line with its cells' translations between pipes."""
    body = line.rstrip("\r\n")
    end = line[len(body) :]
    indent = body[: len(body) - len(body.lstrip())]
    piped = body.strip().startswith("|")
    row = " | ".join(cell.replace("|", "\\|") for cell in cells)
    return f"{indent}| {row} |{end}" if piped else f"{indent}{row}{end}"
