"""POST /translate_file: a file uploaded as multipart form data comes back translated in its
format; a file too large, of no known format or that its library cannot read is a 4xx
naming why, and the server goes on serving."""

from __future__ import annotations

import uuid

import pytest
import srt
from serving import serving_app

from nmt.serve.catalog import ServedModel
from nmt.serve.server import Limits, create_app
from nmt.translate.translator import Translator

SUBTITLES = b"1\n00:00:01,000 --> 00:00:03,500\nwe see the small dog\nbecause <i>they sleep</i>.\n"


def multipart(fields: dict[str, str], file: tuple[str, bytes] | None) -> tuple[bytes, dict]:
    """A multipart/form-data body and its header, as a browser's form sends it."""
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     f"{value}\r\n".encode())  # fmt: skip
    if file is not None:
        filename, data = file
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
        )
        parts.append(head.encode() + data + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}


@pytest.fixture(scope="module")
def server(demo_rnnsearch):
    models = {"demo": ServedModel("demo", Translator.load(demo_rnnsearch))}
    with serving_app(create_app(models, limits=Limits(max_body_bytes=4096), workers=1)) as client:
        yield client


def upload(server, fields, file):
    body, headers = multipart(fields, file)
    return server.request("POST", "/translate_file", body, headers=headers)


def test_an_uploaded_file_comes_back_translated_in_its_format(server):
    status, answer = upload(server, {"id": "demo"}, ("film.srt", SUBTITLES))
    assert status == 200, answer
    (cue,) = srt.parse(answer)
    assert (cue.index, cue.start.total_seconds(), cue.end.total_seconds()) == (1, 1.0, 3.5)
    assert "<i>sie schlafen</i>" in cue.content and len(cue.content.splitlines()) == 2
    status, limits = server.request("GET", "/translator/limits")
    assert {"name": "srt", "extensions": [".srt"]} in limits["file_formats"]


@pytest.mark.parametrize(
    "fields, file, status, detail",
    [
        ({"id": "demo"}, ("film.xyz", SUBTITLES), 422, "no format has this file's extension"),
        ({"id": "demo", "format": "pdf"}, ("film.srt", SUBTITLES), 422, "unknown format"),
        ({"id": "demo"}, ("film.srt", b"garbage"), 422, "film.srt: not a srt file its library"),
        ({"id": "nope"}, ("film.srt", SUBTITLES), 404, "unknown model id 'nope'"),
        ({"id": "demo"}, None, 422, "Field required"),
        ({"id": "demo"}, ("big.srt", SUBTITLES * 100), 413, "larger than this server's limit"),
        ({"id": "demo", "tgt_lang": "fr"}, ("film.srt", SUBTITLES), 422, "writes only de"),
    ],
)
def test_what_cannot_be_translated_is_a_4xx_naming_why(server, fields, file, status, detail):
    got, answer = upload(server, fields, file)
    assert got == status and detail in str(answer), answer
    assert server.request("GET", "/translator/health") == (200, {"status": "ok"})
