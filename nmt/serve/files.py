"""`POST /translate_file`: a file of one of the formats `nmt translate --input` reads
(nmt/documents/), uploaded as multipart form data and answered with the translated file.
Its body counts against the server's --max-body-kib like any request's; files are
translated one at a time, each beside the batched sentences of /translator/translate."""

from __future__ import annotations

import asyncio
from pathlib import PurePosixPath
from typing import Annotated
from urllib.parse import quote

from fastapi import FastAPI, File, Form, HTTPException, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from nmt.documents.formats import BY_EXTENSION, FORMATS, Settings, translate_document
from nmt.documents.segments import SegmentTranslator
from nmt.errors import UserError
from nmt.serve.api import excerpt
from nmt.serve.catalog import ServedModel
from nmt.translate.memory import without_memory

MEDIA_TYPES = {
    "txt": "text/plain; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "xml": "application/xml",
    "md": "text/markdown; charset=utf-8",
    "srt": "application/x-subrip",
    "vtt": "text/vtt; charset=utf-8",
    "po": "text/x-gettext-translation; charset=utf-8",
    "xliff": "application/xliff+xml",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


def file_formats() -> list[dict]:
    """The formats /translate_file takes, for GET /translator/limits."""
    return [{"name": f.name, "extensions": list(f.extensions)} for f in FORMATS.values()]


def serve_files(app: FastAPI, models: dict[str, ServedModel]) -> None:
    one_at_a_time = asyncio.Semaphore(1)

    @app.post("/translate_file", response_class=Response)
    async def translate_file(
        file: Annotated[UploadFile, File(description="The file to translate.")],
        id: Annotated[str, Form(description="A model id from GET /translator/models.")],
        format: Annotated[
            str | None, Form(description="The file's format (default: by its extension).")
        ] = None,
        tgt_lang: Annotated[
            str | None, Form(description="The language to write, of several.")
        ] = None,
        src_lang: Annotated[
            str | None, Form(description="The file's language, where it matters.")
        ] = None,
        adapter: Annotated[
            str | None, Form(description="One of the model's adapters to translate with.")
        ] = None,
    ) -> Response:
        """Translate a file (HTML, XML, Markdown, SubRip, WebVTT, gettext, XLIFF, Word): the
        answer is the file translated, in its format, named NAME.LANG.EXT. A model's
        translation memory is not read for files."""
        model = models.get(id)
        if model is None:
            known = ", ".join(repr(name) for name in models)
            raise HTTPException(404, f"unknown model id {excerpt(id)!r}: set id to one of {known}")
        try:
            model = model.with_adapter(adapter)
        except ValueError as error:
            raise _invalid("adapter", str(error), adapter) from None
        if problem := model.language_error(tgt_lang):
            raise _invalid("tgt_lang", problem, tgt_lang)
        name = PurePosixPath(file.filename or "file").name
        document = _format(format, name)
        data = await file.read()
        # a file's tags are placed through alignments, which a memory's lines cannot give
        engine = without_memory(model.translator)
        translator = SegmentTranslator(engine, src_lang=src_lang, options={"tgt_lang": tgt_lang})
        language = tgt_lang or model.translator.target_languages[0]
        async with one_at_a_time:
            try:
                settings, naming = Settings(language), "the format field"
                translated = await asyncio.to_thread(
                    translate_document, data, document, translator, settings, name, naming
                )
            except UserError as error:
                raise HTTPException(422, str(error)) from None
        path = PurePosixPath(name)
        written = f"{path.stem}.{language}{path.suffix or '.' + document.extensions[0][1:]}"
        disposition = f"attachment; filename*=UTF-8''{quote(written)}"
        return Response(
            translated,
            media_type=MEDIA_TYPES[document.name],
            headers={"Content-Disposition": disposition},
        )


def _format(given: str | None, name: str):
    if given is not None:
        if given not in FORMATS:
            problem = f"unknown format: give one of {', '.join(FORMATS)}, or leave it out"
            raise _invalid("format", problem, given)
        return FORMATS[given]
    document = BY_EXTENSION.get(PurePosixPath(name).suffix.lower())
    if document is None:
        known = " ".join(sorted(BY_EXTENSION))
        problem = f"no format has this file's extension ({known}): name the format in format"
        raise _invalid("file", problem, name)
    return document


def _invalid(field: str, message: str, value: object) -> RequestValidationError:
    """A 422 naming the form field, as pydantic's own errors name a body's."""
    error = {"type": "value_error", "loc": ("body", field), "msg": message}
    return RequestValidationError([{**error, "input": excerpt(value)}])
