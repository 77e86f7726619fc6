"""XLIFF 1.2 and 2.x (.xliff, .xlf), read and written by lxml. Each unit's source that has no
target yet (and is not marked translate="no") is translated with its inline codes (<g>,
<x/>, <bx/>, <ph>, <pc>, <mrk>, ...) kept as tags, into a new target beside it: in 1.2
state "needs-review-translation" with state-qualifier "mt-suggestion", in 2.x the segment's
state "translated" (2.x has no state for a machine's suggestion). The file's target language
(1.2 target-language, 2.x trgLang) is set to the language written; everything else is
kept as it was. A group's or file's translate="no" holds for the units inside it, unless
one says otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

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
    units = _untranslated(root, version)
    translated = translate([Segment(_inner(source), "xml") for source, _ in units])
    for (source, parent), text in zip(units, translated, strict=True):
        # every namespace in scope at the source, which its inline codes' prefixes may use
        wrapper = f"<target{_declarations(source.nsmap)}>{text}</target>"
        target = _element(wrapper, source.sourceline)
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
        if not _translatable(unit):
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


def _translatable(unit: etree._Element) -> bool:
    """A unit's translate="no" or "yes", or else its nearest group's or file's: it inherits."""
    for element in (unit, *unit.iterancestors()):
        if element.get("translate") is not None:
            return element.get("translate") != "no"
    return True


def _declarations(namespaces: dict) -> str:
    return "".join(
        f" xmlns{'' if prefix is None else ':' + prefix}={quoteattr(uri)}"
        for prefix, uri in namespaces.items()
    )


def _local(tag: str) -> str:
    return etree.QName(tag).localname


def _set_target_language(root: etree._Element, version: str, language: str) -> None:
    if version.startswith("1"):
        for file in root:
            if isinstance(file.tag, str) and _local(file.tag) == "file":
                file.set("target-language", language)
    else:
        root.set("trgLang", language)
