"""The console page at ``/ui`` and the API docs at ``/docs``, served from files in the package.

Nothing is fetched from the network: the console is plain HTML, CSS and
JavaScript in ``server/static/console``; ``/docs`` uses Swagger UI from the
``swagger-ui-bundle`` package when it is installed (the ``server`` extra
installs it) and lists the endpoints as plain HTML either way.

Every response of the server carries security headers (:class:`SecurityHeaders`):
a Content-Security-Policy that allows only this origin's own files — no
inline script or style, no frames around it (``frame-ancestors 'none'``) —
``nosniff``, no referrer, and ``no-store`` on API answers. The docs page
alone allows inline style attributes, which Swagger UI sets.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"
CONSOLE = STATIC / "console"
DOCS = STATIC / "docs"

STRICT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
DOCS_CSP = STRICT_CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")


def swagger_dir() -> Path | None:
    """Swagger UI's files from the ``swagger-ui-bundle`` package, or None when it is not installed."""
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    path = Path(swagger_ui_bundle.swagger_ui_path)
    return path if (path / "swagger-ui-bundle.js").is_file() else None


class SecurityHeaders:
    """Adds the security headers to every HTTP response (pure ASGI, so streaming is untouched)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        csp = DOCS_CSP if path == "/docs" or path.startswith("/docs/") else STRICT_CSP
        api = path.startswith("/v1/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                extra = [
                    (b"content-security-policy", csp.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                ]
                if api:
                    extra.append((b"cache-control", b"no-store"))
                headers += [(name, value) for name, value in extra if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


_DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>stratamem API</title>
{swagger_css}<link rel="stylesheet" href="/docs/assets/docs.css">
</head><body>
<div id="swagger-ui"></div>
<div id="plain"><h1>stratamem {version}</h1>
<p>OpenAPI document: <a href="/openapi.json">/openapi.json</a>. MCP (streamable HTTP): <code>/mcp</code>.
Operator console: <a href="/ui">/ui</a>. Every request except this page, <code>/openapi.json</code> and
<code>/v1/health</code> needs <code>Authorization: Bearer &lt;token&gt;</code>.</p>
<ul>{items}</ul></div>
{swagger_js}</body></html>
"""


def docs_page(doc: dict[str, Any], with_swagger: bool) -> str:
    """Swagger UI from local files when installed, over a plain list of the endpoints (shown without it)."""
    items = "".join(
        f"<li><code>{html.escape(method.upper())} {html.escape(path)}</code> — {html.escape(op['summary'])}</li>"
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
    )
    css = '<link rel="stylesheet" href="/docs/swagger/swagger-ui.css">\n' if with_swagger else ""
    js = (
        (
            '<script src="/docs/swagger/swagger-ui-bundle.js"></script>\n'
            '<script src="/docs/assets/docs.js"></script>\n'
        )
        if with_swagger
        else ""
    )
    return _DOCS_PAGE.format(
        version=html.escape(doc["info"]["version"]), items=items, swagger_css=css, swagger_js=js
    )


def as_openapi_30(node: Any) -> Any:
    """The 3.1 document in the 3.0 dialect the bundled Swagger UI (4.x) renders: nullable and enum for const.

    Only for display at ``/docs``; ``/openapi.json`` stays the 3.1 original.
    """
    if isinstance(node, list):
        return [as_openapi_30(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {name: as_openapi_30(value) for name, value in node.items()}
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [k for k in kind if k != "null"]
        out["type"], out["nullable"] = (rest[0] if len(rest) == 1 else rest), True
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if isinstance(out.get("openapi"), str):
        out["openapi"] = "3.0.3"
    return out


def routes(doc: dict[str, Any]) -> list[BaseRoute]:
    """``/`` (to the console), ``/ui`` and its files, ``/docs`` and its files."""
    swagger = swagger_dir()
    page = docs_page(doc, swagger is not None)

    async def root(request: Request) -> Response:
        return RedirectResponse("/ui", status_code=307)

    async def console(request: Request) -> Response:
        return FileResponse(CONSOLE / "index.html", media_type="text/html; charset=utf-8")

    async def docs(request: Request) -> Response:
        return HTMLResponse(page)

    doc_30 = json.dumps(as_openapi_30(doc), ensure_ascii=False)

    async def openapi_30(request: Request) -> Response:
        return Response(doc_30, media_type="application/json")

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    out: list[BaseRoute] = [
        Route("/", root, methods=["GET"]),
        Route("/ui", console, methods=["GET"]),
        Mount("/ui/assets", app=StaticFiles(directory=CONSOLE), name="console-assets"),
        Route("/docs", docs, methods=["GET"]),
        Route("/docs/openapi-3.0.json", openapi_30, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Mount("/docs/assets", app=StaticFiles(directory=DOCS), name="docs-assets"),
    ]
    if swagger is not None:
        out.append(Mount("/docs/swagger", app=StaticFiles(directory=swagger), name="swagger"))
    return out
