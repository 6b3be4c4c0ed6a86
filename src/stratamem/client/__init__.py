"""``stratamem.Client`` / ``AsyncClient``: the HTTP server's API as Python methods.

Needs the ``client`` extra (``pip install 'stratamem[client]'``: httpx). Each
method is one operation of :mod:`stratamem.client.calls` (same name, same
arguments, same docstring) and answers the server's JSON shape as a dict;
an error answer is raised as the library's own exception class with the same
``code`` (``ValidationError``, ``NotFound``, ``PolicyBlocked``,
``StorageError``, the turn's ``TurnStateError`` and ``LimitExceededError``; a
missing or unknown token is :class:`Unauthenticated`), so code written against
the in-process library handles the same errors.

The token defaults to the ``STRATAMEM_TOKEN`` environment variable.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

from ..errors import NotFound, PolicyBlocked, StorageError, StratamemError, ValidationError
from ..extras import require
from ..turn.errors import LimitExceededError, TurnStateError
from . import calls
from .calls import Call

require("client")
import httpx  # noqa: E402 - after the install hint

__all__ = ["AsyncClient", "Client", "Unauthenticated"]


class Unauthenticated(StratamemError):
    """No bearer token, or one the server does not know (HTTP 401; an HTTP-only code)."""

    code = "UNAUTHENTICATED"
    exit_code = 4


ERRORS: dict[str, type[StratamemError]] = {
    **{cls.code: cls for cls in (ValidationError, NotFound, PolicyBlocked, StorageError, Unauthenticated)},
    # the turn's own codes (their classes carry the code per instance)
    **{cls.default_code: cls for cls in (TurnStateError, LimitExceededError)},
}


def _headers(token: str | None) -> dict[str, str]:
    token = token if token is not None else os.environ.get("STRATAMEM_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def decode(call: Call, response: httpx.Response) -> Any:
    """The answer's JSON, or the library exception its error shape names."""
    try:
        data = response.json()
    except (ValueError, UnicodeDecodeError):
        raise StorageError(f"the server answered HTTP {response.status_code} without JSON") from None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        error = data["error"]
        cls = ERRORS.get(str(error.get("code")), StorageError)
        raise cls(str(error.get("message", "")))
    if call.none_when_not_found and isinstance(data, dict) and data.get("found") is False:
        return None
    if response.status_code >= 400:
        raise StorageError(f"the server answered HTTP {response.status_code}")
    return data


def _request(call: Call) -> dict[str, Any]:
    options: dict[str, Any] = {"params": call.params}
    if call.body is not None:
        options["content"] = json.dumps(call.body, ensure_ascii=False).encode("utf-8", "surrogatepass")
        options["headers"] = {"Content-Type": "application/json"}
    return options


def _unreachable(exc: httpx.HTTPError) -> StorageError:
    return StorageError(f"the stratamem server could not be reached ({type(exc).__name__})")


class Client:
    """A synchronous client: ``Client("http://127.0.0.1:8765").save(session_id, "k", "v")``."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8765",
        token: str | None = None,
        *,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.http = http or httpx.Client(base_url=base_url, headers=_headers(token), timeout=timeout)

    def send(self, call: Call) -> Any:
        try:
            response = self.http.request(call.method, call.path, **_request(call))
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from None
        return decode(call, response)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """The same methods, awaitable: ``await AsyncClient(url).search(session_id, "coffee")``."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8765",
        token: str | None = None,
        *,
        timeout: float = 30.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.http = http or httpx.AsyncClient(base_url=base_url, headers=_headers(token), timeout=timeout)

    async def send(self, call: Call) -> Any:
        try:
            response = await self.http.request(call.method, call.path, **_request(call))
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from None
        return decode(call, response)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _sync_method(build: Callable[..., Call]) -> Callable[..., Any]:
    @functools.wraps(build)
    def method(self: Client, *args: Any, **kwargs: Any) -> Any:
        return self.send(build(*args, **kwargs))

    return method


def _async_method(build: Callable[..., Call]) -> Callable[..., Any]:
    @functools.wraps(build)
    async def method(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        return await self.send(build(*args, **kwargs))

    return method


for _name, _build in calls.OPERATIONS.items():  # one definition per operation, two ways to send it
    setattr(Client, _name, _sync_method(_build))
    setattr(AsyncClient, _name, _async_method(_build))
