"""`nmt serve`: the models named on the command line behind an HTTP API and a web page.

The API is OpenNMT-py's (`POST /translator/translate` with `[{"src": ..., "id": ...}]`,
`GET /translator/models`, `GET /translator/health`), so its clients work unchanged; the
answer is `[[{src, tgt, pred_score, n_best}, ...]]`, the outer list by n-best rank, the
inner by input. `GET /translator/limits` tells clients (the page) how many sentences a
request may hold. Requests are checked by pydantic (422 naming the field), then decoded in
shared batches, one per core, each on one torch thread (nmt/serve/microbatch.py). The page
at `/` is static files that call the same API; `/docs` is Swagger UI, served from local files
with relative URLs, so it works offline and behind a path prefix. Behind `--api-key` the page
and the docs stay public (they hold no data); the schema then declares the key as a bearer
scheme, so Swagger UI's "Authorize" sends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import json
import signal
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from nmt.cores import available_cores
from nmt.errors import UserError
from nmt.serve.api import (
    MAX_BEAM,
    Health,
    LimitsInfo,
    ModelInfo,
    TranslateRequest,
    TranslationOut,
    error_details,
)
from nmt.serve.catalog import ServedModel, chained, translate_items
from nmt.serve.files import file_formats, serve_files
from nmt.serve.guards import ApiKeyGuard, BodyGuard, declare_bearer
from nmt.serve.loading import load_models
from nmt.serve.microbatch import MicroBatcher
from nmt.serve.planning import plan, refused
from nmt.translate.constraints import ConstraintError
from nmt.translate.parallel import one_torch_thread

STATIC = Path(__file__).parent / "static"
SWAGGER_UI = Path(fastapi_offline.__file__).parent / "static"  # Swagger UI's own files
ROUTES = (
    "POST /translator/translate; GET /translator/models, /translator/limits and "
    "/translator/health; the page at / and the API docs at /docs"
)
PAGE_HEADERS = {  # the page runs only its own files: no inline or third-party script
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'",
    "X-Content-Type-Options": "nosniff",
}


@dataclass(frozen=True)
class Limits:
    max_sentences: int = 64  # per request
    max_body_bytes: int = 1 << 20
    max_batch: int = 64  # sentences decoded together
    window: float = 0.005  # seconds a lone request waits for others to share its batch
    max_connections: int = 1024  # beyond it, uvicorn answers 503 at once


def create_app(
    models: dict[str, ServedModel],
    api_key: str | None = None,
    limits: Limits = Limits(),
    workers: int | None = None,
) -> FastAPI:
    """The ASGI app. `workers` batches are decoded side by side, each search on one torch
    thread; by default one per core (with uvloop and httptools the event loop needs little
    CPU of its own)."""
    workers = workers or available_cores()
    batcher = MicroBatcher(
        lambda key, items: translate_items(
            chained(models, key[0], key[4], key[1].through),
            key[1],
            items,
            limits.max_batch,
            key[2],
            key[3],
            key[5],
            key[6],
        ),
        window=limits.window,
        max_batch=limits.max_batch,
        workers=workers,
        setup=one_torch_thread,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI):
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(
        title="nmt",
        summary="Neural machine translation with attention; OpenNMT-py's server API.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    _answer_errors(app)
    _serve_api(app, models, limits, batcher)
    serve_files(app, models)
    _serve_page(app)
    app.add_middleware(BodyGuard, limit=limits.max_body_bytes)
    if api_key:
        app.add_middleware(ApiKeyGuard, api_key=api_key)  # added last: runs first
        build = app.openapi

        def openapi() -> dict:
            if app.openapi_schema is None:  # build() keeps what it builds there
                declare_bearer(build())
            return app.openapi_schema

        app.openapi = openapi
    return app


def _answer_errors(app: FastAPI) -> None:
    """A 404, a 405 and a request that fails validation answer with what to do instead."""

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, error: StarletteHTTPException) -> JSONResponse:
        """The router's 404 and 405 (plain "Not Found", "Method Not Allowed") say what is
        there instead; the routes' own details pass unchanged."""
        detail, allowed = error.detail, (error.headers or {}).get("Allow")
        if error.status_code == 404 and detail == "Not Found":
            detail = f"no such route; this server has {ROUTES}"
        elif error.status_code == 405 and allowed:
            detail = f"{request.method} is not allowed here; use {allowed}"
        return JSONResponse({"detail": detail}, error.status_code, headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        return _AsciiJSONResponse({"detail": jsonable_encoder(error_details(error.errors()))}, 422)


def _serve_api(
    app: FastAPI, models: dict[str, ServedModel], limits: Limits, batcher: MicroBatcher
) -> None:
    """The routes under /translator: OpenNMT-py's translate and models, limits and health."""

    @app.post(
        "/translator/translate",
        response_model=list[list[TranslationOut]],
        response_model_exclude_none=True,
    )
    async def translate(items: list[TranslateRequest]) -> JSONResponse:
        """Translate sentences: answer[k][i] is the k-th best translation of input i. A
        request holds at most `max_sentences` of them (GET /translator/limits)."""
        if len(items) > limits.max_sentences:
            detail = (
                f"a request holds at most {limits.max_sentences} sentences (this server's "
                f"--max-sentences), got {len(items)}; send them in several requests"
            )
            return _AsciiJSONResponse({"detail": detail}, 422)
        if not items:
            return JSONResponse([])
        groups, nbest = plan(models, items)
        try:
            results = await asyncio.gather(
                *(batcher.submit(key, [item for _, item in group]) for key, group in groups.items())
            )
        except ConstraintError as error:  # one only a pivot shows: a prefix too long for it
            raise refused(items[error.index], error) from None
        except UserError as error:
            return _AsciiJSONResponse({"detail": str(error)}, 422)
        answers: list[list[dict]] = [[] for _ in items]
        for group, found in zip(groups.values(), results, strict=True):
            for (index, _), answer in zip(group, found, strict=True):
                answers[index] = answer
        return JSONResponse([[answer[rank] for answer in answers] for rank in range(nbest)])

    @app.get("/translator/models", response_model=list[ModelInfo])
    async def list_models() -> list[dict]:
        """The models this server offers, by id, with their default decode settings."""
        return [model.describe(models) for model in models.values()]

    @app.get("/translator/limits", response_model=LimitsInfo)
    async def list_limits() -> dict:
        """What one request may ask of this server."""
        return {
            "max_sentences": limits.max_sentences,
            "max_body_bytes": limits.max_body_bytes,
            "max_beam": MAX_BEAM,
            "file_formats": file_formats(),
        }

    @app.get("/translator/health", response_model=Health)
    async def health() -> dict:
        """Always public, for load balancers and the test fixtures."""
        return {"status": "ok"}


def _serve_page(app: FastAPI) -> None:
    """The page at /, the API's docs at /docs, and their files."""

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        """Swagger UI from local files; every URL relative, as the page's are."""
        return get_swagger_ui_html(
            openapi_url="openapi.json",
            title="nmt API",
            swagger_js_url="static/docs/swagger-ui-bundle.js",
            swagger_css_url="static/docs/swagger-ui.css",
            swagger_favicon_url="static/docs/favicon.png",
        )

    app.mount("/static/docs", StaticFiles(directory=SWAGGER_UI), name="swagger-ui")
    app.mount("/static", StaticFiles(directory=STATIC), name="static")


class _AsciiJSONResponse(JSONResponse):
    """A 422 echoes (an excerpt of) the input, which may hold lone surrogates (from JSON's
    \\ud800 escapes) that UTF-8 cannot encode: escaping everything keeps it well-formed."""

    def render(self, content: object) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def serve(
    specs: Sequence[str],
    adapters: Sequence[str] = (),
    memories: Sequence[Path] = (),
    host: str = "127.0.0.1",
    port: int = 5000,
    api_key: str | None = None,
    limits: Limits = Limits(),
    workers: int | None = None,
    quantize: str | None = None,
    decode: dict | None = None,
) -> None:
    """Loads the checkpoints, the `adapters` and translation `memories` on them
    (`quantize` "int8": as int8 models; `decode`: settings that replace their decode
    sections', e.g. max_src_len), binds host:port, and serves until SIGTERM or Ctrl-C.

    SIGTERM stops accepting connections, finishes the requests in flight, and returns
    (the command exits 0).
    """
    import uvicorn

    listener = _bind(host, port)  # before loading: a busy port fails at once
    try:
        models = load_models(
            specs, quantize=quantize, adapters=adapters, memories=memories, **(decode or {})
        )
    except BaseException:
        listener.close()
        raise
    if warning := exposure_warning(host, api_key):
        print(warning, file=sys.stderr)
    app = create_app(models, api_key, limits, workers)
    config = uvicorn.Config(
        app,
        log_level="info",
        access_log=False,  # a line per request costs throughput; a reverse proxy logs them
        limit_concurrency=limits.max_connections,
        timeout_graceful_shutdown=60,
    )
    bound = listener.getsockname()
    address = f"[{bound[0]}]" if listener.family == socket.AF_INET6 else bound[0]
    print(
        f"serving {', '.join(models)} on http://{address}:{bound[1]}/ "
        "(API /translator, docs /docs)",
        file=sys.stderr,
        flush=True,
    )
    # uvicorn re-raises the signal it stopped for once it has shut down gracefully; this
    # handler makes that SIGTERM a normal return instead of the default death by signal.
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        signal.signal(signal.SIGTERM, previous)
        listener.close()


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a UserError saying why not (port in use, unknown host)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise UserError(f"--host {host}: not an address of this machine ({error}).") from None
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
        listener.listen(2048)
    except OSError as error:
        listener.close()
        reason = "it is in use" if error.errno == errno.EADDRINUSE else error.strerror
        raise UserError(
            f"cannot listen on {host}:{port}: {reason}. Pick another --port, or stop the "
            "program that holds it."
        ) from None
    return listener


def exposure_warning(host: str, api_key: str | None) -> str | None:
    """What to say when anyone on the network could use the models, else None."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback or api_key:
        return None
    return (
        f"warning: serving on {host} without --api-key: anyone who can reach this port can "
        "use the models. Set --api-key, or serve on --host 127.0.0.1 behind a reverse proxy."
    )
