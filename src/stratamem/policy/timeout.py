"""Running operator code (hooks, rule evaluation) with a deadline.

A hook that hangs must not hang the agent, and a hook that is slow must not
let a call through by default. The work runs on a daemon thread and the
caller waits on a future for at most ``seconds``; on timeout the caller gets
``TimeoutError`` (and blocks). Python cannot kill the thread, so it runs on
in the background, but as a daemon it never holds up interpreter exit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

T = TypeVar("T")


def call_with_timeout(fn: Callable[[], T], seconds: float | None) -> T:
    """``fn()``'s result, or ``TimeoutError`` after ``seconds``; ``None`` waits inline without a thread."""
    if seconds is None:
        return fn()
    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            future.set_exception(exc)

    threading.Thread(target=run, name="stratamem-policy-hook", daemon=True).start()
    try:
        return future.result(timeout=seconds)
    except FutureTimeout:
        future.cancel()
        raise TimeoutError(f"policy evaluation exceeded {seconds} s") from None
