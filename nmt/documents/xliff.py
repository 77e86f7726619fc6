"""XLIFF 1.2 and 2.x (.xliff, .xlf), read and written by lxml. Each unit's source that has no
target yet (and is not marked translate="no") is translated with its inline codes (<g>,
<x/>, <bx/>, <ph>, <pc>, <mrk>, ...) kept as tags, into a new target beside it: in 1.2
state "needs-review-translation" with state-qualifier "mt-suggestion", in 2.x the segment's
state "translated" (2.x has no state for a machine's suggestion). The file's target language
(1.2 target-language, 2.x trgLang) is set to the language written; everything else is
kept as it was."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lxml import etree

from nmt.documents.errors import DocumentError
from nmt.documents.segments import Segment, Translate

if TYPE_CHECKING:
    from nmt.documents.formats import Settings


def translate_xliff(data: bytes, translate: Translate, settings: Settings) -> bytes:
    root = _parsed(data)
    version = root.get("version", "")
    if _local(root.tag) != "xliff" or version[:1] not in ("1", "2"):
        raise DocumentError(
            f"line {root.sourceline}: the root element is <{_local(root.tag)} version="
            f"{version!r}>, not an XLIFF 1.2 or 2.x <xliff>"
        )
    namespace = root.nsmap.get(None, "")
    units = _untranslated(root, version)
    translated = translate([Segment(_inner(source), "xml") for source, _ in units])
    for (source, parent), text in zip(units, translated, strict=True):
        target = _element(f"<target{_xmlns(namespace)}>{text}</target>", source.sourceline)
        target.tail = source.tail
        source.addnext(target)
        if version.startswith("1"):
            target.set("state", "needs-review-translation")
            target.set("state-qualifier", "mt-suggestion")
        else:
            parent.set("state", "translated")
    if settings.tgt_lang:
        _set_target_language(root, version, settings.tgt_lang)
    return etree.tostring(root.getroottree(), xml_declaration=True, encoding="UTF-8")


def _parsed(data: bytes) -> etree._Element:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=False)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as error:
        line, column = error.position
        raise DocumentError(f"line {line}, column {column}: {error.msg}") from None


def _untranslated(root: etree._Element, version: str) -> list[tuple]:
    """(source, its segment or unit) of each source without a target, in order."""
    container = "trans-unit" if version.startswith("1") else "segment"
    found = []
    for holder in root.iter():
        if not isinstance(holder.tag, str) or _local(holder.tag) != container:
            continue
        unit = holder if version.startswith("1") else holder.getparent()
        if unit.get("translate") == "no":
            continue
        children = {_local(child.tag): child for child in holder if isinstance(child.tag, str)}
        source, target = children.get("source"), children.get("target")
        if source is not None and (target is None or not _inner(target).strip()):
            if target is not None:
                holder.remove(target)
            found.append((source, holder))
    return found


def _inner(element: etree._Element) -> str:
    """The element's content as XML text: its text, and its children with their tails."""
    whole = etree.tostring(element, encoding="unicode", with_tail=False)
    if whole.endswith("/>"):
        return ""
    return whole[whole.index(">") + 1 : whole.rindex("</")]


def _element(text: str, line: int) -> etree._Element:
    try:
        return etree.fromstring(text)
    except etree.XMLSyntaxError as error:  # a translation that is not XML: a bug to report
        raise DocumentError(f"line {line}: the translation is not XML ({error.msg})") from None


def _xmlns(namespace: str) -> str:
    return f' xmlns="{namespace}"' if namespace else ""


def _local(tag: str) -> str:
    return etree.QName(tag).localname


def _set_target_language(root: etree._Element, version: str, language: str) -> None:
    if version.startswith("1"):
        for file in root:
            if isinstance(file.tag, str) and _local(file.tag) == "file":
                file.set("target-language", language)
    else:
        root.set("trgLang", language)
