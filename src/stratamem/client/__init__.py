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
from collections.abc import Awaitable, Callable
from typing import Any, Generic, ParamSpec, overload

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


P = ParamSpec("P")


class _Sync(Generic[P]):
    """One operation as a ``Client`` method, typed by its builder's signature (checkers and IDEs see it).

    The operation is stated once, in :mod:`calls`; this only sends what the builder returns.
    """

    def __init__(self, build: Callable[P, Call]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type[Any]) -> _Sync[P]: ...
    @overload
    def __get__(self, client: Client, owner: type[Any]) -> Callable[P, Any]: ...
    def __get__(self, client: Client | None, owner: type[Any]) -> _Sync[P] | Callable[P, Any]:
        if client is None:
            return self
        build, send = self.build, client.send

        @functools.wraps(build)
        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return send(build(*args, **kwargs))

        return method


class _Async(Generic[P]):
    """The same for ``AsyncClient``: the method returns an awaitable of the answer."""

    def __init__(self, build: Callable[P, Call]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type[Any]) -> _Async[P]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type[Any]) -> Callable[P, Awaitable[Any]]: ...
    def __get__(
        self, client: AsyncClient | None, owner: type[Any]
    ) -> _Async[P] | Callable[P, Awaitable[Any]]:
        if client is None:
            return self
        build, send = self.build, client.send

        @functools.wraps(build)
        async def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return await send(build(*args, **kwargs))

        return method


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

    # one line per operation of calls.OPERATIONS (tests/server/test_client_typing.py checks the list)
    health = _Sync(calls.health)
    tools = _Sync(calls.tools)
    create_session = _Sync(calls.create_session)
    get_session = _Sync(calls.get_session)
    escalate = _Sync(calls.escalate)
    reset = _Sync(calls.reset)
    save = _Sync(calls.save)
    save_many = _Sync(calls.save_many)
    get = _Sync(calls.get)
    list_memories = _Sync(calls.list_memories)
    delete = _Sync(calls.delete)
    search = _Sync(calls.search)
    audit = _Sync(calls.audit)
    audit_verify = _Sync(calls.audit_verify)
    begin_turn = _Sync(calls.begin_turn)
    prompt = _Sync(calls.prompt)
    tool_calls = _Sync(calls.tool_calls)
    tool_result = _Sync(calls.tool_result)
    usage = _Sync(calls.usage)
    end_turn = _Sync(calls.end_turn)
    transcript = _Sync(calls.transcript)


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

    # one line per operation of calls.OPERATIONS (tests/server/test_client_typing.py checks the list)
    health = _Async(calls.health)
    tools = _Async(calls.tools)
    create_session = _Async(calls.create_session)
    get_session = _Async(calls.get_session)
    escalate = _Async(calls.escalate)
    reset = _Async(calls.reset)
    save = _Async(calls.save)
    save_many = _Async(calls.save_many)
    get = _Async(calls.get)
    list_memories = _Async(calls.list_memories)
    delete = _Async(calls.delete)
    search = _Async(calls.search)
    audit = _Async(calls.audit)
    audit_verify = _Async(calls.audit_verify)
    begin_turn = _Async(calls.begin_turn)
    prompt = _Async(calls.prompt)
    tool_calls = _Async(calls.tool_calls)
    tool_result = _Async(calls.tool_result)
    usage = _Async(calls.usage)
    end_turn = _Async(calls.end_turn)
    transcript = _Async(calls.transcript)
