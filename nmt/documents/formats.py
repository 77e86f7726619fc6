"""The formats `nmt translate --input FILE` reads by extension (or `--format`), each with the
library that reads and writes it, and the one entry point that translates a file's bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nmt.documents import docx, gettext, markdown, markup_files, subtitles, xliff
from nmt.documents.errors import DocumentError
from nmt.documents.segments import Translate
from nmt.errors import UserError


@dataclass(frozen=True)
class Settings:
    """What a format may need besides the text: the language written (a catalogue's
    header), and a subtitle line's greatest length in characters."""

    tgt_lang: str | None = None
    max_line: int = 42


@dataclass(frozen=True)
class Format:
    name: str
    extensions: tuple[str, ...]
    library: str  # what reads and writes it, for the help and the docs
    translate: Callable[[bytes, Translate, Settings], bytes]
    binary: bool = False  # written to a file, never to a terminal


FORMATS = {
    entry.name: entry
    for entry in (
        Format("txt", (".txt",), "a paragraph a line", markup_files.translate_text),
        Format("html", (".html", ".htm", ".xhtml"), "html.parser", markup_files.translate_html),
        Format("xml", (".xml",), "html.parser, XML's rules", markup_files.translate_xml),
        Format("md", (".md", ".markdown"), "markdown-it-py", markdown.translate_markdown),
        Format("srt", (".srt",), "srt", subtitles.translate_srt),
        Format("vtt", (".vtt",), "webvtt-py", subtitles.translate_vtt),
        Format("po", (".po", ".pot"), "polib", gettext.translate_catalogue),
        Format("xliff", (".xliff", ".xlf"), "lxml", xliff.translate_xliff),
        Format("docx", (".docx",), "python-docx", docx.translate_docx, binary=True),
    )
}
BY_EXTENSION = {extension: entry for entry in FORMATS.values() for extension in entry.extensions}


def document_format(path: Path | None, given: str | None) -> Format | None:
    """The format `--format` names, else the one `path`'s extension names (.txt aside: a
    text file is translated line by line unless asked for); None: lines of plain text."""
    if given is not None:
        return FORMATS[given]
    if path is None or path.suffix.lower() == ".txt":
        return None
    return BY_EXTENSION.get(path.suffix.lower())


def translate_document(
    data: bytes,
    document: Format,
    translate: Translate,
    settings: Settings,
    name: str,
    naming: str = "--format",
) -> bytes:
    """The file's bytes translated; a file its library cannot read is a UserError naming
    `name` and where in it (and `naming`, where another format is named)."""
    try:
        return document.translate(data, translate, settings)
    except DocumentError as error:
        raise UserError(
            f"{name}: not a {document.name} file its library ({document.library}) can read: "
            f"{error}. Fix it there, or give {naming} to read it as another format."
        ) from None
