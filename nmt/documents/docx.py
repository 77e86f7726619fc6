"""Word documents (.docx), read and written by python-docx. Each paragraph (of the body, its
tables, headers and footers) is translated with its runs as tags, so that each run's
formatting (bold, italics, fonts, ...) and each hyperlink goes with the words that
translate the words it held; the words a translation adds outside every run take the
formatting of the run before them. What a run holds besides text (a picture, a field, a
tab, a break: its text split from it into runs of their own) and what a paragraph holds
besides runs (bookmarks, comments' marks) is kept where the alignments place it."""

from __future__ import annotations

import copy
import io
import itertools
import zipfile
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

import docx
from docx.oxml.ns import qn
from lxml import etree

from nmt.documents.errors import DocumentError
from nmt.documents.segments import Segment, Translate

if TYPE_CHECKING:
    from nmt.documents.formats import Settings

PARAGRAPH, RUN, TEXT, HYPERLINK = qn("w:p"), qn("w:r"), qn("w:t"), qn("w:hyperlink")
RUN_PROPERTIES, PARAGRAPH_PROPERTIES = qn("w:rPr"), qn("w:pPr")
SPACE = "{http://www.w3.org/XML/1998/namespace}space"
SPACING = frozenset({qn("w:tab"), qn("w:br"), qn("w:cr")})  # a run's content between words


# what a .docx may unpack to: Word's XML compresses 5 to 20 times, a zip bomb a thousand
EXPANSION, UNPACKED_FLOOR = 50, 16 << 20


def translate_docx(data: bytes, translate: Translate, settings: Settings) -> bytes:
    _check_unpacked_size(data)
    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError, etree.XMLSyntaxError) as error:
        raise DocumentError(f"not a Word document (.docx) python-docx can open ({error})") from None
    paragraphs = [p for part in _parts(document) for p in part.iter(PARAGRAPH)]
    for paragraph in paragraphs:
        _split_runs(paragraph)
    marked = [_marked(paragraph) for paragraph in paragraphs]
    todo = [(p, m) for p, m in zip(paragraphs, marked, strict=True) if m is not None]
    translated = translate([Segment(markup, "xml") for _, (markup, _) in todo])
    for (paragraph, (_, items)), text in zip(todo, translated, strict=True):
        _rebuild(paragraph, items, text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _check_unpacked_size(data: bytes) -> None:
    """python-docx unpacks and parses every part at once: a file whose parts would unpack to
    far more than Word's XML ever compresses from is refused before any is read."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
    except zipfile.BadZipFile:
        return  # python-docx names what it is not
    limit = max(EXPANSION * len(data), UNPACKED_FLOOR)
    if unpacked > limit:
        raise DocumentError(
            f"its parts unpack to {unpacked:,} bytes, more than {EXPANSION} times the file's "
            f"{len(data):,} (a Word document's XML compresses far less): refused unread. Save "
            "it again from Word, or split it."
        )


def _parts(document):
    """The XML roots that hold paragraphs: the body (its tables' too), headers and footers."""
    yield document.element.body
    for section in document.sections:
        for part in (section.header, section.footer):
            if not part.is_linked_to_previous:
                yield part._element


def _split_runs(paragraph) -> None:
    """A run that holds text beside anything else (a tab, a break, the mark Word leaves at a
    page's end) becomes a run for each stretch of its text and one for each stretch of the
    rest, each with its formatting: the text is translated, the rest kept where it goes."""
    for run in list(paragraph.iter(RUN)):
        content = [child for child in run if child.tag != RUN_PROPERTIES]
        if len(set(map(_is_text, content))) < 2:
            continue
        parent = run.getparent()
        place = parent.index(run)
        for offset, (_, stretch) in enumerate(itertools.groupby(content, _is_text)):
            piece = copy.deepcopy(run)  # its properties, its class and its namespaces
            for child in list(piece):
                if child.tag != RUN_PROPERTIES:
                    piece.remove(child)
            piece.extend(list(stretch))
            parent.insert(place + offset, piece)
        parent.remove(run)


def _is_text(element) -> bool:
    return element.tag == TEXT


def _spacing(element) -> bool:
    """A run of a tab or a break: words on either side of it are words apart."""
    return element.tag == RUN and any(child.tag in SPACING for child in element)


def _marked(paragraph) -> tuple[str, list] | None:
    """The paragraph as markup, each run a tag <r i="k"> around its text, each hyperlink
    <h i="k"> around its runs, anything else <z i="k"/>; and the elements by k. None: a
    paragraph without text."""
    items: list = []

    def markup(children) -> str:
        out = []
        for child in children:
            if child.tag == PARAGRAPH_PROPERTIES:
                continue
            index = len(items)
            items.append(child)
            if child.tag == RUN and _text_only(child):
                out.append(f'<r i="{index}">{escape(_run_text(child))}</r>')
            elif child.tag == HYPERLINK:
                out.append(f'<h i="{index}">{markup(list(child))}</h>')
            else:  # a tab or a break stands between words: the segment reads a space there
                out.append(f'<z i="{index}"/>' + (" " if _spacing(child) else ""))
        return "".join(out)

    text = markup(list(paragraph))
    if not any(child.tag in (RUN, HYPERLINK) and _has_text(child) for child in paragraph):
        return None
    return text, items


def _text_only(run) -> bool:
    return all(child.tag in (RUN_PROPERTIES, TEXT) for child in run) and bool(_run_text(run))


def _run_text(run) -> str:
    return "".join(t.text or "" for t in run.iter(TEXT))


def _has_text(element) -> bool:
    return any((t.text or "").strip() for t in element.iter(TEXT))


def _rebuild(paragraph, items: list, translated: str) -> None:
    """The paragraph's children (but its properties) made again from the translation."""
    try:
        root = etree.fromstring(f"<p>{translated}</p>")
    except etree.XMLSyntaxError as error:  # markup translation always writes XML
        raise DocumentError(f"a paragraph's translation is not XML ({error.msg})") from None
    last_run = next((item for item in items if item.tag == RUN), None)
    children, _ = _made(root, items, last_run)
    for child in list(paragraph):
        if child.tag != PARAGRAPH_PROPERTIES:
            paragraph.remove(child)
    for child in children:
        paragraph.append(child)


def _made(node, items: list, last_run) -> tuple[list, object]:
    """The Word elements of a translated node's content, in order; and the last run made,
    whose formatting text outside every run takes."""
    made = []

    def text(value: str | None) -> None:
        if value:
            made.append(_run_like(last_run, value))

    text(node.text)
    for child in node:
        original = items[int(child.get("i"))]
        if child.tag == "r":
            last_run = original
            made.append(_run_like(original, "".join(child.itertext())))
        elif child.tag == "h":
            link = copy.deepcopy(original)
            for inner in list(link):
                link.remove(inner)
            inside, last_run = _made(child, items, last_run)
            link.extend(inside)
            made.append(link)
        else:
            made.append(original)
        tail = child.tail
        if tail and _spacing(original):  # the space read for a tab or a break is that
            tail = tail.removeprefix(" ")
        text(tail)
    return made, last_run


def _run_like(run, value: str):
    """A run with `run`'s formatting (none without one) holding `value`."""
    made = copy.deepcopy(run) if run is not None else etree.Element(RUN)
    for child in list(made):
        if child.tag != RUN_PROPERTIES:
            made.remove(child)
    text = etree.SubElement(made, TEXT)
    text.text = value
    text.set(SPACE, "preserve")
    return made
