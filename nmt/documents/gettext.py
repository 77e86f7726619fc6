"""gettext catalogues (.po, .pot), read and written by polib. Each untranslated message is
translated (msgid into msgstr; with a plural, msgid into the first form and msgid_plural
into the others) and flagged `fuzzy`, as msgmerge flags a translation a person has not
checked yet: msgfmt leaves it out until someone clears the flag (`msgfmt --use-fuzzy`
takes it). Messages already translated, obsolete ones and the header are kept as they
are, but the header's Language, which becomes the language written. Format variables
(`%s`, `%(name)d`, `{count}`) come back as they were (nmt/data/markup's PLACEHOLDERS)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polib

from nmt.documents.errors import DocumentError, decoded
from nmt.documents.segments import Segment, Translate

if TYPE_CHECKING:
    from nmt.documents.formats import Settings


def translate_catalogue(data: bytes, translate: Translate, settings: Settings) -> bytes:
    try:
        # polib opens any text that names a file as that file: a catalogue of one line,
        # "/etc/passwd", would be read from the disk. No file's name ends in a line end.
        catalogue = polib.pofile(decoded(data) + "\n", wrapwidth=78)
    except (OSError, ValueError) as error:  # polib names the line in its message
        raise DocumentError(str(error)) from None
    todo = [entry for entry in catalogue if not entry.obsolete and not entry.translated()]
    sources = []
    for entry in todo:
        sources.append(entry.msgid)
        if entry.msgid_plural:
            sources.append(entry.msgid_plural)
    translated = iter(translate([Segment(text, "text") for text in sources]))
    forms = _plural_forms(catalogue)
    for entry in todo:
        singular = next(translated)
        if entry.msgid_plural:
            plural = next(translated)
            entry.msgstr_plural = {0: singular, **{n: plural for n in range(1, forms)}}
        else:
            entry.msgstr = singular
        if "fuzzy" not in entry.flags:
            entry.flags.append("fuzzy")
    if settings.tgt_lang:
        catalogue.metadata["Language"] = settings.tgt_lang
    return str(catalogue).encode("utf-8")


def _plural_forms(catalogue: polib.POFile) -> int:
    """The number of plural forms the header's Plural-Forms names (2 without one)."""
    header = catalogue.metadata.get("Plural-Forms", "")
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name.strip() == "nplurals" and value.strip().isdigit():
            return max(int(value), 1)
    return 2
