"""Uvicorn's httptools protocol, sending a response's head and first body part in one socket write.

Uvicorn writes the status line and headers (``http.response.start``) and the
body (``http.response.body``) with two ``transport.write`` calls, and asyncio
sends each straight away: two ``send`` system calls per answer. In this
server the event loop's thread shares the interpreter lock with the worker
threads running store calls, and every system call gives the lock up and
waits to get it back behind them (about 0.4 ms a send under 8 clients), so
the second send costs far more than its bytes.

Here each response's ``send`` marks its head to be held by the connection's
:class:`CorkedTransport`; the first body message's write carries it out with
the body, and once that message is handled nothing is held any more (a HEAD
answer or an empty body sends the head alone then). ``close`` and
``write_eof`` send what is held first, ``abort`` drops it like the rest of the
transport's buffer: nothing is lost, reordered, or held past the response's
first body message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

Send = Callable[[Any], Coroutine[Any, Any, None]]


class CorkedTransport:
    """Wraps an asyncio transport; after :meth:`hold`, the next write waits to go out with the one after it."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._holding = False
        self._held: bytes | None = None

    def hold(self) -> None:
        """Keep the next write back until the write after it, or :meth:`flush`."""
        self._holding = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._holding:
            self._holding = False
            self._held = bytes(data)
            return
        held, self._held = self._held, None
        self._transport.write(data if held is None else held + bytes(data))

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def flush(self) -> None:
        """Send what is held, if anything, and hold nothing more."""
        self._holding = False
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._holding, self._held = False, None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def __getattr__(self, name: str) -> Any:  # everything else: the transport itself
        return getattr(self._transport, name)


def corked_send(send: Send, transport: CorkedTransport) -> Send:
    """``send`` of one response, holding its head back for the first body message."""

    async def send_corked(message: Any) -> None:
        if message["type"] == "http.response.start":
            transport.hold()
            try:
                await send(message)
            except BaseException:
                transport.flush()
                raise
            return
        try:
            await send(message)
        finally:
            transport.flush()

    return send_corked


class CorkedHttpToolsProtocol(HttpToolsProtocol):
    """Uvicorn's httptools protocol on a :class:`CorkedTransport` (pass as ``uvicorn.Config(http=...)``)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CorkedTransport(transport))  # type: ignore[arg-type]

    def on_headers_complete(self) -> None:
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle is not before and isinstance(self.transport, CorkedTransport):
            # the cycle's task has not run yet: its app will be given this send
            cycle.send = corked_send(cycle.send, self.transport)  # type: ignore[method-assign, assignment]
