"""The explorer's web app (Starlette): one page, its assets, and a read-only JSON API.

Routes, all ``GET`` (any other method is refused with 405: nothing can write):

- ``/``: the page; ``/assets/{name}``: its scripts and styles (a fixed list, from the
  package);
- ``/api/summary``: counts, degree distribution, hubs, the methods available;
- ``/api/entities?q=&limit=``: entity search; ``/api/entity/{id}?offset=&limit=``: one page
  of an entity's relations;
- ``/api/passages?offset=&limit=``, ``/api/passage/{id}``: passages with their triplets;
- ``/api/communities?level=&offset=&limit=``: the community reports of a level;
- ``/api/ask?q=&method=&top_k=``: the explanation of a question (naive RAG's list inside);
  ``HEAD`` checks the arguments and runs nothing.

Errors are JSON ``{"error": ...}``: 404 for what the index does not hold, 400 for a bad
request (``method=local`` on an index without communities included), 500 otherwise; an
error repeats at most :data:`MAX_ERROR_CHARS` characters of what it was given.

Every response carries a Content-Security-Policy that allows the page's own scripts only
(``script-src 'self'``, no inline script, no connection elsewhere). Bound to a loopback
address, the app answers only requests addressed to a loopback name (``Host`` checked), so a
web page elsewhere cannot reach it through DNS rebinding.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from importlib import resources
from typing import Any

from llama_index.core.vector_stores import MetadataFilters
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from llama_index_graphrag_milvus.cli.common import shorten
from llama_index_graphrag_milvus.errors import GraphRAGError, InvalidInputError
from llama_index_graphrag_milvus.explore.data import (
    DEFAULT_PAGE,
    DEFAULT_TOP_K,
    ExplorerData,
    NotFoundError,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

ASSETS: dict[str, tuple[str, str]] = {
    "cytoscape.min.js": ("llama_index_graphrag_milvus.explain", "text/javascript"),
    "explain.js": ("llama_index_graphrag_milvus.explain", "text/javascript"),
    "explain.css": ("llama_index_graphrag_milvus.explain", "text/css"),
    "explorer.js": ("llama_index_graphrag_milvus.explore", "text/javascript"),
    "explorer.css": ("llama_index_graphrag_milvus.explore", "text/css"),
    "explorer.html": ("llama_index_graphrag_milvus.explore", "text/html; charset=utf-8"),
}
"""The files the app serves, from the ``assets/`` folder of a package: name to (package,
content type). Nothing else is served."""

MAX_ERROR_CHARS = 500
"""Characters of an error message a response holds at most."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
"""``Host`` names the app answers when it is bound to a loopback address."""

SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
     b"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
     b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """ASGI middleware that adds :data:`SECURITY_HEADERS` to every HTTP response."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def _asset(name: str) -> Response:
    found = ASSETS.get(name)
    if found is None:
        return _error(f"no asset {shorten(repr(name), 80)}", 404)
    package, media_type = found
    body = resources.files(package).joinpath("assets").joinpath(name).read_bytes()
    return Response(body, media_type=media_type)


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": shorten(message, MAX_ERROR_CHARS)}, status_code=status)


def _int(request: Request, name: str, default: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise InvalidInputError(f"{name} must be an integer, got {raw[:40]!r}") from exc


def _required_int(request: Request, name: str, default: int) -> int:
    value = _int(request, name, default)
    return default if value is None else value


def create_app(index_or_data: Any, loopback_only: bool = True,
               filters: MetadataFilters | None = None) -> Starlette:
    """The explorer's ASGI app on an index (or an :class:`ExplorerData`).

    ``loopback_only`` (default) answers only requests whose ``Host`` is a loopback name;
    pass ``False`` when serving it under another name (behind a proxy, on a LAN address).
    ``filters`` (one tenant's) scope everything it shows (see
    :class:`~llama_index_graphrag_milvus.explore.data.ExplorerData`).

    Example::

        app = create_app(index)        # mount it in an ASGI server of your own
    """
    data = (index_or_data if isinstance(index_or_data, ExplorerData)
            else ExplorerData(index_or_data, filters))

    def api(handler: Callable[[Request], Any]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(handler(request))
            except NotFoundError as exc:
                return _error(str(exc), 404)
            except InvalidInputError as exc:
                return _error(str(exc), 400)
            except GraphRAGError as exc:
                return _error(str(exc), 500)
        return endpoint

    def ask(request: Request) -> Any:
        arguments = (request.query_params.get("q", ""),
                     request.query_params.get("method", "bridge"),
                     _required_int(request, "top_k", DEFAULT_TOP_K))
        if request.method == "HEAD":  # the headers of a GET, without running the question
            data.check_question(*arguments)
            return None
        return data.ask(*arguments)

    routes = [
        Route("/", lambda r: _asset("explorer.html"), methods=["GET"]),
        Route("/assets/{name}", lambda r: _asset(r.path_params["name"]), methods=["GET"]),
        Route("/api/summary", api(lambda r: data.summary()), methods=["GET"]),
        Route("/api/entities", api(lambda r: data.search_entities(
            r.query_params.get("q", ""), _required_int(r, "limit", 20))), methods=["GET"]),
        Route("/api/entity/{entity_id}", api(lambda r: data.neighbourhood(
            r.path_params["entity_id"], _required_int(r, "offset", 0),
            _required_int(r, "limit", DEFAULT_PAGE))), methods=["GET"]),
        Route("/api/passages", api(lambda r: data.passages(
            _required_int(r, "offset", 0), _required_int(r, "limit", DEFAULT_PAGE))),
            methods=["GET"]),
        Route("/api/passage/{passage_id}", api(lambda r: data.passage(
            r.path_params["passage_id"])), methods=["GET"]),
        Route("/api/communities", api(lambda r: data.communities(
            _int(r, "level", None), _required_int(r, "offset", 0),
            _required_int(r, "limit", DEFAULT_PAGE))), methods=["GET"]),
        Route("/api/ask", api(ask), methods=["GET"]),
    ]
    middleware = [Middleware(SecurityHeaders)]
    if loopback_only:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_NAMES)))
    return Starlette(routes=routes, middleware=middleware)
