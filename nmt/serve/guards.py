"""What every request passes before a route sees it: the API key, then the body's size and
encoding. Plain ASGI middleware, so they cover every route alike and refuse a request before
its body is parsed.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from starlette.responses import JSONResponse

Scope = dict[str, Any]
# Load balancers probe health without a key. The page, the API docs and their files hold no
# data, so a browser can open them; the page then asks for the key the API calls need, and
# Swagger UI offers "Authorize" (declare_bearer).
PUBLIC_PATHS = frozenset({"/translator/health", "/", "/docs", "/openapi.json"})
PUBLIC_PREFIXES = ("/static/",)
BEARER = "apiKey"  # the security scheme's name in the OpenAPI schema


class ApiKeyGuard:
    """Every route but health, the page and the docs needs `Authorization: Bearer KEY`; 401
    otherwise.

    Both sides are hashed before the constant-time comparison, so neither the time taken nor
    an early length mismatch tells an attacker anything about the key.
    """

    def __init__(self, app: Any, api_key: str):
        self.app = app
        self.digest = hashlib.sha256(api_key.encode()).digest()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
        if scope["type"] != "http" or public or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            {"detail": "missing or wrong API key: send the header 'Authorization: Bearer KEY'"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        header = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, token = header.partition(b" ")
        given = hashlib.sha256(token.strip()).digest()
        return scheme.lower() == b"bearer" and hmac.compare_digest(given, self.digest)


def declare_bearer(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (OpenAPI, changed in place) with the key as an HTTP bearer scheme that every
    operation the guard covers requires: Swagger UI then shows "Authorize", and "Try it out"
    sends `Authorization: Bearer KEY`."""
    scheme = {"type": "http", "scheme": "bearer", "description": "The server's --api-key."}
    schema.setdefault("components", {})["securitySchemes"] = {BEARER: scheme}
    for path, operations in schema["paths"].items():
        if path not in PUBLIC_PATHS:
            for operation in operations.values():
                operation["security"] = [{BEARER: []}]
    return schema


# bodies that are files, uploaded as multipart form data: held to the size limit alone
FILE_PATHS = frozenset({"/translate_file"})


class BodyGuard:
    """Request bodies over `limit` bytes get 413 (by Content-Length before reading, or as
    they stream in); a body that is not UTF-8 gets 400 naming the byte offset. A body that
    passes is handed on whole, as JSON whatever its Content-Type says: OpenNMT-py's server
    reads it so, and its clients (and `curl -d`) may send a form type. An upload to
    FILE_PATHS is handed on as it came."""

    def __init__(self, app: Any, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await self._too_large(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        if scope.get("path") in FILE_PATHS:
            await self.app(scope, _replay(bytes(body), receive), send)
            return
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as error:
            response = JSONResponse(
                {
                    "detail": f"the body is not UTF-8 (byte {error.start}: {error.reason}); "
                    "send it encoded as UTF-8"
                },
                status_code=400,
            )
            await response(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
        scope = {**scope, "headers": [*headers, (b"content-type", b"application/json")]}
        await self.app(scope, _replay(bytes(body), receive), send)

    async def _too_large(self, scope: Scope, receive: Any, send: Any) -> None:
        detail = (
            f"the body is larger than this server's limit of {self.limit} bytes "
            "(--max-body-kib): send fewer or shorter sentences per request"
        )
        await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)


def _replay(body: bytes, receive: Any) -> Any:
    """A receive callable that gives the buffered body once, then the client's own events."""
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
