"""`nmt translate --input FILE` for the files people translate (nmt/documents/): which
format a file is, and translating it whole into --output (or standard output)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from nmt.documents.formats import Format, Settings, document_format
from nmt.documents.formats import translate_document as translated_bytes
from nmt.documents.segments import SegmentTranslator
from nmt.errors import UserError
from nmt.outputs import write_output
from nmt.reads import record


def document_of(input: Path | None, given: str | None, markup: str | None) -> Format | None:
    """The format of --input (by --format or its extension), or None for lines of text
    (with --markup: lines of markup, whatever the file's extension)."""
    if given is not None and input is None:
        raise UserError(
            f"--format {given} translates a whole file: give it as --input FILE (standard "
            "input is read line by line)."
        )
    if markup is not None and given is not None:
        raise UserError(
            f"--markup {markup} reads lines of marked-up text and --format {given} a whole "
            f"file, whose format decides its markup: give one of them."
        )
    if markup is not None:  # lines of markup, whatever the file's name
        return None
    return document_format(input, given)


def translate_file(
    document: Format,
    input: Path,
    output: Path | None,
    translator: Any,
    keep: list[str] | None,
    src_lang: str | None,
    tgt_lang: str | None,
    placement: str | None = None,
) -> None:
    """Translates the file whole and writes it to `output` (checked against every file the
    command read, written atomically), or to standard output."""
    if output is None and document.binary:
        raise UserError(
            f"{input} is a {document.name} file, which cannot go to standard output: give "
            "--output FILE."
        )
    try:
        data = record(input, "--input").read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {input}: {error.strerror}.") from None
    options = {"placement": placement} if placement else {}
    segments = SegmentTranslator(translator, keep=keep or (), src_lang=src_lang, options=options)
    settings = Settings(tgt_lang=tgt_lang or _written_language(translator))
    translated = translated_bytes(data, document, segments, settings, str(input))
    if output is None:
        sys.stdout.buffer.write(translated)
        sys.stdout.flush()
    else:
        write_output(output, translated)


def _written_language(translator: Any) -> str | None:
    languages = getattr(translator, "target_languages", None) or [None]
    return languages[0]
