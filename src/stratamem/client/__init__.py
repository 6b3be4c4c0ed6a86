"""``stratamem.Client`` / ``AsyncClient``: the HTTP server's API as Python methods.

Needs the ``client`` extra (``pip install 'stratamem[client]'``: httpx). Each
method is one operation of :mod:`stratamem.client.calls` (same name, same
arguments, same docstring) and answers the server's JSON shape as a dict;
an error answer is raised as the library's own exception class with the same
``code`` (``ValidationError``, ``NotFound``, ``PolicyBlocked``,
``StorageError``, the turn's ``TurnStateError`` and ``LimitExceededError``; a
missing or unknown token is :class:`Unauthenticated`), so code written against
the in-process library handles the same errors.

The token defaults to the ``STRATAMEM_TOKEN`` environment variable, then, for a
server on this machine, to the development token a config-less ``stratamem
serve`` writes (``$STRATAMEM_HOME/server-token``, the path ``stratamem config``
prints), so a local client needs no token at all.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

from ..errors import NotFound, PolicyBlocked, StorageError, StratamemError, ValidationError
from ..extras import require
from ..server.devtoken import local_token
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


def _headers(base_url: str, token: str | None) -> dict[str, str]:
    """The bearer header: the given token, else ``STRATAMEM_TOKEN``, else the local development token."""
    if token is None:
        token = os.environ.get("STRATAMEM_TOKEN") or local_token(base_url)
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


def _unreachable(exc: httpx.HTTPError, http: httpx.Client | httpx.AsyncClient) -> StorageError:
    """Which server could not be reached, and how: its address and the request's path, never the query."""
    try:
        url = exc.request.url
    except RuntimeError:  # an error raised before a request was built
        url = http.base_url
    where = url.copy_with(query=None, fragment=None, userinfo=b"")
    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return StorageError(f"the stratamem server at {where} could not be reached ({reason})")


P = ParamSpec("P")
H = TypeVar("H", httpx.Client, httpx.AsyncClient)


class _Operation(Generic[P]):
    """One operation as a method of either client, typed by its builder's signature (checkers and IDEs see it).

    The operation is stated once, in :mod:`calls`; this only sends what the builder returns: on a
    ``Client`` the method answers, on an ``AsyncClient`` it returns an awaitable of the answer.
    """

    def __init__(self, build: Callable[P, Call]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type[Any]) -> _Operation[P]: ...
    @overload
    def __get__(self, client: Client, owner: type[Any]) -> Callable[P, Any]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type[Any]) -> Callable[P, Awaitable[Any]]: ...
    def __get__(
        self, client: Client | AsyncClient | None, owner: type[Any]
    ) -> _Operation[P] | Callable[P, Any] | Callable[P, Awaitable[Any]]:
        if client is None:
            return self
        build = self.build
        if isinstance(client, AsyncClient):
            send_async = client.send

            @functools.wraps(build)
            async def method_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await send_async(build(*args, **kwargs))

            return method_async
        send = client.send

        @functools.wraps(build)
        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return send(build(*args, **kwargs))

        return method


class _Operations(Generic[H]):
    """What both clients share: the connection they are made with, and one method per operation."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8765",
        token: str | None = None,
        *,
        timeout: float = 30.0,
        http: H | None = None,
    ) -> None:
        self.http: H = http or self._connect(
            base_url=base_url, headers=_headers(base_url, token), timeout=timeout
        )

    def _connect(self, **options: Any) -> H:
        raise NotImplementedError

    # one line per operation of calls.OPERATIONS (tests/server/test_client_typing.py checks the list)
    health = _Operation(calls.health)
    tools = _Operation(calls.tools)
    create_session = _Operation(calls.create_session)
    get_session = _Operation(calls.get_session)
    escalate = _Operation(calls.escalate)
    enter = _Operation(calls.enter)
    reset = _Operation(calls.reset)
    save = _Operation(calls.save)
    save_many = _Operation(calls.save_many)
    get = _Operation(calls.get)
    list_memories = _Operation(calls.list_memories)
    delete = _Operation(calls.delete)
    search = _Operation(calls.search)
    audit = _Operation(calls.audit)
    audit_verify = _Operation(calls.audit_verify)
    begin_turn = _Operation(calls.begin_turn)
    prompt = _Operation(calls.prompt)
    tool_calls = _Operation(calls.tool_calls)
    tool_result = _Operation(calls.tool_result)
    usage = _Operation(calls.usage)
    end_turn = _Operation(calls.end_turn)
    transcript = _Operation(calls.transcript)


class Client(_Operations[httpx.Client]):
    """A synchronous client: ``Client("http://127.0.0.1:8765").save(session_id, "k", "v")``."""

    def _connect(self, **options: Any) -> httpx.Client:
        return httpx.Client(**options)

    def send(self, call: Call) -> Any:
        try:
            response = self.http.request(call.method, call.path, **_request(call))
        except httpx.HTTPError as exc:
            raise _unreachable(exc, self.http) from None
        return decode(call, response)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Operations[httpx.AsyncClient]):
    """The same methods, awaitable: ``await AsyncClient(url).search(session_id, "coffee")``."""

    def _connect(self, **options: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(**options)

    async def send(self, call: Call) -> Any:
        try:
            response = await self.http.request(call.method, call.path, **_request(call))
        except httpx.HTTPError as exc:
            raise _unreachable(exc, self.http) from None
        return decode(call, response)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
