"""Uvicorn's httptools protocol, sending a response's head and body in one socket write.

Uvicorn writes the status line and headers (``http.response.start``) and the
body (``http.response.body``) with two ``transport.write`` calls, and asyncio
sends each straight away: two ``send`` system calls per answer. In this
server the event loop's thread shares the interpreter lock with the worker
threads running store calls, and every system call gives the lock up and
waits to get it back behind them (about 0.4 ms a send under 8 clients), so
the second send costs far more than its bytes. :class:`CorkedTransport`
holds a response head back until the next write (the body, normally in the
same step of the same task) and sends both together; whatever comes first —
the next write, ``close``, ``write_eof`` or the next turn of the event loop —
sends what is held, so nothing is ever delayed by more than one turn of the
loop, reordered or lost (``abort`` drops it, as it drops the transport's own
buffer).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_END = b"\r\n\r\n"


class CorkedTransport:
    """Wraps an asyncio transport; joins a response head with the write that follows it."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held + bytes(data))
        elif (
            bytes(data[-4:]) == HEAD_END
        ):  # a response head (uvicorn writes one in one call): wait for its body
            self._held = bytes(data)
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def flush(self) -> None:
        """Send what is held, if anything."""
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
        self._held = None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def __getattr__(self, name: str) -> Any:  # everything else: the transport itself
        return getattr(self._transport, name)


class CorkedHttpToolsProtocol(HttpToolsProtocol):
    """Uvicorn's httptools protocol on a :class:`CorkedTransport` (pass as ``uvicorn.Config(http=...)``)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        corked = CorkedTransport(transport, asyncio.get_running_loop())
        super().connection_made(corked)  # type: ignore[arg-type]
