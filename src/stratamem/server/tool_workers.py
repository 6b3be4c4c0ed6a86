"""``stratamem serve --workers N``: the memory tool calls run in N worker processes.

One server process runs the HTTP layer, sessions and their MCP bindings, the
console and the turn API; the memory tool calls over REST and MCP (save, get,
list, search, delete, batches, the graph) are the bulk of a busy server's
work, and under one interpreter lock the HTTP layer and the searches take
turns on one core. With workers, the server resolves the call's session
(opening one for a stateless MCP call) and sends the call to a worker
process that has its own :class:`~stratamem.store.Store` on the same database
(SQLite's WAL, a Markdown store's lock and PostgreSQL all take several
processes) and runs the very same function as without workers
(:func:`run_tool_call`): same gate, same session check, same audit.

Nothing is cached in a worker between calls: the session, its taint and the
principal's rights are read from the store on every call, so a session the
server escalates is escalated for the next call on any worker.

A worker's reply carries, beside the tool's answer, the name and duration of each store operation the
call ran, so ``/metrics`` times the workers' store operations like the server's own.

A worker ignores SIGINT and SIGTERM (a terminal's Ctrl-C or a service
manager signals the whole process group): it stops when the server closes
its pipes, after the calls it has started are finished and its store is
closed. A worker that dies is replaced; a call it may have received answers
``STORAGE_ERROR`` saying it may or may not have been applied, and a call that
finds it dead goes to another worker.
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from .. import shapes, tracing
from ..errors import StratamemError, ValidationError
from ..policy.redact import scrubbed_logger
from ..storage.timed import Observer as TimingObserver
from ..storage.timed import timed_backend
from ..store import Store
from ..tools import execute
from ..tools.specs import PROFILES, TRIGGERFISH, specs
from .config import MAX_WORKERS, PolicySettings
from .principals import Principal, Principals
from .state import ServerState
from .warm import warm_up

logger = scrubbed_logger("stratamem.server")

SLOTS_PER_WORKER = 8  # calls one worker runs at once (its threads; SQLite releases the lock in queries)
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
#: every tool name of every profile: the only names metrics and spans show (any other is ``other``)
KNOWN_TOOLS = frozenset(spec.name for profile in PROFILES for spec in specs(profile))
# a worker's reply: the tool's text (None: an unexpected error there) and its store operations' timings
Timing = tuple[str, float, bool]  # (operation, seconds, failed), as ``storage.timed`` reports them
_call_timings = threading.local()  # the timings of the call a worker thread is running
LOST = "the worker process running this call stopped; the call may or may not have been applied"
UNAVAILABLE = "no worker process could take this call; it was not applied"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One memory tool call of a principal in one of its sessions, as the HTTP layer received it."""

    principal: Principal
    session_id: str
    name: str
    arguments: Any
    profile: str = TRIGGERFISH
    origin: str = "rest"


def tool_label(name: object) -> str:
    """``name`` if it is a known tool's, else ``other``: a name a client sent is not a label."""
    return name if isinstance(name, str) and name in KNOWN_TOOLS else "other"


def run_tool_call(state: ServerState, call: ToolCall) -> str:
    """The principal's session checked, then the tool through ``execute`` (the one gate)."""
    try:
        session = state.session_for(call.principal, call.session_id)
    except StratamemError as exc:
        return shapes.dumps(shapes.error_from(exc))
    text = execute(
        session,
        call.name,
        call.arguments,
        policy=state.policy_for(call.principal),
        profile=call.profile,
        origin=call.origin,
    )
    if text is None:  # callers check the name against the profile first
        return shapes.dumps(shapes.error("VALIDATION_ERROR", f"unknown tool: {call.name}"))
    return text


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What a worker needs to open the same store under the same operator policy."""

    db: str
    store_options: dict[str, Any]
    principals: tuple[Principal, ...]
    policy: PolicySettings
    profile: str


def check_workers(count: object, db: str) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_WORKERS:
        raise ValidationError(f"workers must be an integer from 1 to {MAX_WORKERS}")
    if count > 1 and db.strip() == ":memory:":
        raise ValidationError("--workers needs a database file or a PostgreSQL URL, not :memory:")
    return count


def _worker_main(conns: list[Connection], settings: WorkerSettings) -> None:
    """A worker process: one thread per pipe, each answering calls until its pipe closes."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    store = Store(settings.db, **settings.store_options)
    store.backend = timed_backend(store.backend, _note_timing)  # each reply carries its call's timings
    try:
        warm_up(store)
        principals = Principals(settings.principals)
        state = ServerState(store, principals, profile=settings.profile, policy=settings.policy.build())
        conns[0].send("ready")
        threads = [threading.Thread(target=_answer, args=(state, conn), daemon=True) for conn in conns]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        store.close()


def run_call(state: ServerState, call: ToolCall) -> str | None:
    """Blocking: :func:`dispatch`, observed (a REST call: its tool span and metrics)."""
    return observed(state, call.name, call.principal.agent, lambda: dispatch(state, call))


def observed(state: ServerState, tool: str, agent: str, run: Callable[[], str | None]) -> str | None:
    """Blocking: ``run()``, one served tool call, in a ``stratamem.tool`` span and counted in the server's
    metrics (REST through :func:`run_call`, MCP over HTTP through its resolver)."""
    started = time.perf_counter()
    answer: str | None = None
    try:
        with tracing.span("stratamem.tool", {"stratamem.tool": tool_label(tool)}):
            answer = run()
        return answer
    finally:
        if state.metrics is not None:
            state.metrics.tool_call(tool, agent, time.perf_counter() - started, answer)


def dispatch(state: ServerState, call: ToolCall) -> str | None:
    """Blocking: the call in a worker process when the server has them, else in this process.

    ``None`` stands for an unexpected error in a worker (logged there). A call
    whose arguments nest deeper than pickle goes (JSON takes more) runs here:
    the answer is the same, only where it is computed differs.
    """
    if state.workers is not None:
        try:
            message = pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)
        except RecursionError:
            message = None
        if message is not None:
            return state.workers.call(message)
    return run_tool_call(state, call)


def _note_timing(operation: str, seconds: float, failed: bool) -> None:
    noted: list[Timing] | None = getattr(_call_timings, "noted", None)
    if noted is not None:
        noted.append((operation, seconds, failed))


def _answer(state: ServerState, conn: Connection) -> None:
    while True:
        try:
            message = conn.recv_bytes()  # a whole message, so a bad one below leaves the pipe in step
        except (EOFError, OSError):
            return
        reply: str | None = None
        _call_timings.noted = []
        try:
            reply = run_tool_call(state, pickle.loads(message))
        except Exception:  # logged here; the caller gets the CONTRACT's internal error
            logger.exception("unexpected error in a worker")
        timings, _call_timings.noted = tuple(_call_timings.noted), None
        try:
            conn.send((reply, timings))
        except OSError:
            return


class _Worker:
    """One worker process and the server's ends of its pipes; ``generation`` counts replacements."""

    def __init__(self, settings: WorkerSettings) -> None:
        context = multiprocessing.get_context("spawn")  # the server has threads: never fork it
        pairs = [context.Pipe() for _ in range(SLOTS_PER_WORKER)]
        self.conns = [ours for ours, _ in pairs]
        self.process: BaseProcess = context.Process(
            target=_worker_main, args=([theirs for _, theirs in pairs], settings), daemon=True
        )
        self.process.start()
        for _, theirs in pairs:
            theirs.close()

    def wait_ready(self) -> None:
        if not self.conns[0].poll(START_TIMEOUT_S) or self.conns[0].recv() != "ready":
            raise EOFError

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


class ToolWorkers:
    """N worker processes with ``SLOTS_PER_WORKER`` pipes each; :meth:`call` blocks for a free pipe."""

    def __init__(self, settings: WorkerSettings, count: int) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._free: queue.SimpleQueue[tuple[int, int, Connection]] = queue.SimpleQueue()
        self._workers: list[_Worker] = []
        self._generations: list[int] = []
        self._closed = False
        # told of each store operation a worker ran for a call (the server's latency histogram)
        self.store_observers: list[TimingObserver] = []
        try:
            for _ in range(count):
                self._workers.append(_Worker(settings))
                self._generations.append(0)
            for worker in self._workers:
                worker.wait_ready()
        except (EOFError, OSError):
            self.close()
            raise ValidationError(
                f"the worker processes could not open {settings.db}; run without --workers to see why"
            ) from None
        for index in range(count):
            self._offer(index)

    def __len__(self) -> int:
        return len(self._workers)

    @property
    def restarts(self) -> int:
        """How many worker processes have been replaced since the server started (``/metrics``)."""
        return sum(self._generations)

    def call(self, message: bytes) -> str | None:
        """Blocking: a pickled :class:`ToolCall` run in a worker; ``None`` for an unexpected error there.

        A worker found dead before the call reaches it is replaced and the call goes to another pipe
        (nothing was applied); only a call a worker may have received can be lost. Replacements that
        keep dying (a store no process can open any more) end the call after one try per worker.
        """
        for _ in range(len(self._workers) + 1):
            index, generation, conn = self._free.get()
            while generation != self._generations[index]:  # a pipe of a worker since replaced
                index, generation, conn = self._free.get()
            try:
                if not self._workers[index].process.is_alive():
                    raise BrokenPipeError
                conn.send_bytes(message)
            except OSError:  # the worker is gone, and it never saw this call
                self._replace(index, generation)
                continue
            try:
                reply, timings = conn.recv()
            except BaseException as exc:
                self._replace(index, generation)  # never reuse a pipe that may still owe an answer
                if isinstance(exc, (EOFError, OSError)):
                    return shapes.dumps(shapes.error("STORAGE_ERROR", LOST))
                raise
            self._free.put((index, generation, conn))
            for timing in timings:
                for observe in self.store_observers:
                    observe(*timing)
            return reply if isinstance(reply, str) else None
        return shapes.dumps(shapes.error("STORAGE_ERROR", UNAVAILABLE))

    def _offer(self, index: int) -> None:
        for conn in self._workers[index].conns:
            self._free.put((index, self._generations[index], conn))

    def _replace(self, index: int, generation: int) -> None:
        """Start a new worker in place of a dead one (once, whichever of its callers notices first)."""
        with self._lock:
            if self._generations[index] != generation or self._closed:
                return
            logger.error("worker process %d stopped; starting a new one", index)
            self._workers[index].close()
            self._workers[index].process.join(timeout=STOP_TIMEOUT_S)
            self._generations[index] += 1
            worker = _Worker(self.settings)
            try:
                worker.wait_ready()
            except (EOFError, OSError):
                logger.error("the new worker process %d did not start", index)
            self._workers[index] = worker
            self._offer(index)

    def close(self) -> None:
        """Close the pipes; each worker finishes its calls, closes its store and exits."""
        with self._lock:
            self._closed = True  # a call cut off by this is not a dead worker to replace
        for worker in self._workers:
            worker.close()
        for worker in self._workers:
            worker.process.join(timeout=STOP_TIMEOUT_S)
            if worker.process.is_alive():
                worker.process.terminate()
