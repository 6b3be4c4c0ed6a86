"""The operator console's JSON API under ``/v1/console`` (the page itself is ``ui.py``).

Sign-in: an operator token (``operator = true`` in the server config; the
local development token is one) opens a console at a clearance it holds with
``POST /v1/console/open``, which is audited and answers a console id. Every
other call sends both the bearer token and ``X-Stratamem-Console: <id>``; the
id is bound to the principal that opened it and expires (``CONSOLE_TTL``),
after which the page asks to sign in again. The sign-in is kept in the store,
hashed (``storage/server_state.py``), so every server of one database honours it. Nothing rides in a URL or a
cookie, so a cross-site page can neither read nor act (no CSRF surface).

Every view is an :class:`stratamem.operator.OperatorView` call: bounded,
paged, within the clearance, audited. Actions need ``{"confirm": true}`` in
the body, on top of the page's own confirmation step.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..declassify import Declassification
from ..errors import NotFound, PolicyBlocked, StratamemError, ValidationError
from ..labels import Label, reads
from ..levels import Level
from ..operator import OperatorView
from ..storage import server_state
from ..storage.sql.rows import to_us
from ..tools import execute
from ..tools.specs import TRIGGERFISH
from ..transfer import dump_lines
from ..validation import parse_time
from . import console_payloads as shapes
from . import extensions
from .auth import principal_of
from .principals import Principal
from .query_params import MAX_POSITION, Count, Spec, Text, read_query
from .responses import from_tool_text, json_response
from .rest import endpoint, read_json
from .state import ServerState, blocking

CONSOLE_HEADER = "x-stratamem-console"
CONSOLE_TTL = timedelta(hours=8)
MAX_CONSOLES = 256  # views kept per process; the sign-ins themselves are in the store
KIND = "console"
MAX_BODY_BYTES = 64 * 1024
MAX_FILTER_CHARS = 1000
# how a record's lineage shows the console's own reads of it: one counted row, or every event
CONSOLE_READS = ("collapse", "show")
ONE_SHOT = ("hide", "show")  # the sessions CLI commands opened for themselves (SessionRecord.one_shot)


class SignInExpired(StratamemError):
    """The console id is unknown, another principal's, or expired (answered 401)."""

    code = "UNAUTHENTICATED"


_FILTER = Text(MAX_FILTER_CHARS)
_PAGE = Count(1, 200, 50)
_BEFORE = Count(0, MAX_POSITION)
C = "/v1/console"
#: the query parameters of every GET route, as the OpenAPI document names its paths
QUERIES: dict[str, Spec] = {
    f"{C}/agents": {"limit": Count(1, 200, 100), "after": _FILTER},
    f"{C}/agents/{{agent}}/memories": {
        "limit": _PAGE,
        **dict.fromkeys(("level", "tag", "category", "text", "status", "after"), _FILTER),
    },
    f"{C}/agents/{{agent}}/versions": {"key": _FILTER},
    f"{C}/agents/{{agent}}/export": {},
    f"{C}/records/{{ref}}": {
        "before": _BEFORE,
        "limit": _PAGE,
        "console_reads": Text(choices=CONSOLE_READS, default="collapse"),
    },
    f"{C}/sessions": {
        "limit": _PAGE,
        "after": _FILTER,
        "agent": _FILTER,
        "one_shot": Text(choices=ONE_SHOT, default="hide"),
    },
    f"{C}/audit": {"limit": _PAGE, "before": _BEFORE},
    f"{C}/usage": dict.fromkeys(("agent", "since", "until"), _FILTER),
    f"{C}/graph": dict.fromkeys(("agent", "after"), _FILTER),
    f"{C}/graph/node": dict.fromkeys(("agent", "name"), _FILTER),
    f"{C}/declassify": {
        "status": Text(choices=("pending", "done", "denied", "expired")),
        "limit": _PAGE,
        "before": _BEFORE,
    },
}


def _query(request: Request, path: str) -> dict[str, Any]:
    """The route's parameters by the one reader; an empty filter is no filter."""
    return {
        name: None if value == "" else value
        for name, value in read_query(request.query_params, QUERIES[path]).items()
    }


def _confirmed(body: dict[str, Any]) -> None:
    if body.get("confirm") is not True:
        raise ValidationError('this action changes the store; send {"confirm": true} to perform it')


class ConsoleApi:
    """The ``/v1/console`` endpoints of one server; sign-ins live in the store until they expire."""

    def __init__(self, state: ServerState, ttl: timedelta = CONSOLE_TTL) -> None:
        self.state = state
        self.ttl = ttl
        self._views: OrderedDict[str, OperatorView] = OrderedDict()  # by the sign-in's digest
        self._views_lock = threading.Lock()  # sign-ins are checked in worker threads

    def routes(self) -> list[Route]:
        c = "/v1/console"
        return [
            Route(f"{c}/open", self.open, methods=["POST"]),
            Route(f"{c}/close", self.close, methods=["POST"]),
            Route(f"{c}/agents", self.agents, methods=["GET"]),
            Route(f"{c}/agents/{{agent}}/memories", self.memories, methods=["GET"]),
            Route(f"{c}/agents/{{agent}}/versions", self.versions, methods=["GET"]),
            Route(f"{c}/agents/{{agent}}/search", self.search, methods=["POST"]),
            Route(f"{c}/agents/{{agent}}/export", self.export, methods=["GET"]),
            Route(f"{c}/records/{{ref:int}}", self.record, methods=["GET"]),
            Route(f"{c}/records/{{ref:int}}/delete", self.delete, methods=["POST"]),
            Route(f"{c}/records/{{ref:int}}/restore", self.restore, methods=["POST"]),
            Route(f"{c}/sessions", self.sessions, methods=["GET"]),
            Route(f"{c}/audit", self.audit, methods=["GET"]),
            Route(f"{c}/audit/verify", self.verify, methods=["POST"]),
            Route(f"{c}/purge", self.purge, methods=["POST"]),
            Route(f"{c}/usage", self.usage, methods=["GET"]),
            Route(f"{c}/graph", self.graph, methods=["GET"]),
            Route(f"{c}/graph/node", self.graph_node, methods=["GET"]),
            Route(f"{c}/declassify", self.declassify, methods=["POST"]),
            Route(f"{c}/declassify", self.declassifications, methods=["GET"]),
            Route(f"{c}/declassify/{{request_id:int}}/approve", self.approve, methods=["POST"]),
            Route(f"{c}/declassify/{{request_id:int}}/deny", self.deny, methods=["POST"]),
        ]

    # sign-in ------------------------------------------------------------------------------
    @staticmethod
    def _operator(request: Request) -> Principal:
        principal = principal_of(request)
        if not principal.operator:
            raise PolicyBlocked("the console needs an operator token (operator = true in the server config)")
        return principal

    def _signed_in(self, request: Request) -> OperatorView:
        """The view of the caller's console sign-in, read from the store (any server may have opened it).

        Blocking. The view object is kept per process by the id's digest; the
        sign-in itself — principal, clearance, expiry — is the store's, so a
        console opened on one server answers on every other, and one closed or
        expired anywhere is refused everywhere.
        """
        principal = self._operator(request)
        key = server_state.digest(KIND, request.headers.get(CONSOLE_HEADER, ""))
        entry = server_state.get(self.state.store.backend, KIND, key, self.state.store.now())
        if entry is None or entry.principal != principal.name:
            self._forget(key)
            raise SignInExpired("the console sign-in has expired or is unknown; sign in again")
        with self._views_lock:
            view = self._views.get(key)
        if view is None:
            clearance = Label.parse(json.loads(entry.payload)["clearance"])
            view = OperatorView(self.state.store, clearance, principal.name)
        self._keep(key, view)
        return view

    def _keep(self, key: str, view: OperatorView) -> None:
        with self._views_lock:
            self._views[key] = view
            self._views.move_to_end(key)
            while len(self._views) > MAX_CONSOLES:
                self._views.popitem(last=False)

    def _forget(self, key: str) -> None:
        with self._views_lock:
            self._views.pop(key, None)

    async def view(self, request: Request) -> OperatorView:
        return await blocking(self._signed_in, request)

    @endpoint
    async def open(self, request: Request) -> Response:
        principal = self._operator(request)
        body = await read_json(request, MAX_BODY_BYTES)
        # a label ("RESTRICTED+HR"): the console sees records within it; never beyond the token's own label
        most = Label(principal.clearance, principal.compartments)
        clearance = Label.parse(body.get("clearance", most.name))
        if not clearance <= most:
            raise PolicyBlocked(f"clearance {clearance.name} is above this token's clearance {most.name}")
        view = await blocking(OperatorView.open, self.state.store, clearance, principal.name)
        console_id = secrets.token_urlsafe(24)
        now = self.state.store.now()
        expires = now + self.ttl
        key = server_state.digest(KIND, console_id)
        entry = server_state.Entry(principal.name, json.dumps({"clearance": clearance.name}), to_us(expires))
        await blocking(server_state.put, self.state.store.backend, KIND, key, entry, now)
        self._keep(key, view)
        return json_response(
            {
                "console": console_id,
                "principal": principal.name,
                "clearance": clearance.name,
                "max_clearance": most.name,
                "expires_at": expires.isoformat(),
                "features": extensions.features(self.state.store),
            },
            201,
        )

    @endpoint
    async def close(self, request: Request) -> Response:
        await self.view(request)
        key = server_state.digest(KIND, request.headers.get(CONSOLE_HEADER, ""))
        self._forget(key)
        await blocking(server_state.drop, self.state.store.backend, KIND, key, self.state.store.now())
        return json_response({"closed": True})

    # views ----------------------------------------------------------------------------------
    @endpoint
    async def agents(self, request: Request) -> Response:
        view = await self.view(request)
        q = _query(request, f"{C}/agents")
        limit = q["limit"]
        found = await blocking(view.agents, q["after"], limit)
        nxt = found[-1].agent_id if len(found) >= limit else None
        return json_response({"agents": [shapes.agent(a) for a in found], "next": nxt})

    @endpoint
    async def memories(self, request: Request) -> Response:
        view = await self.view(request)
        q = _query(request, f"{C}/agents/{{agent}}/memories")
        limit = q["limit"]
        query = view.query(
            request.path_params["agent"],
            level=Level.parse(q["level"]) if q["level"] else None,
            tag=q["tag"],
            category=q["category"],
            text=q["text"],
            status=q["status"] or "all",
            after=shapes.decode_cursor(q["after"], (str, int, int)),
            limit=limit,
        )
        found = await blocking(view.memories, query)
        return json_response(shapes.records_page(found, limit))

    @endpoint
    async def versions(self, request: Request) -> Response:
        view = await self.view(request)
        key = read_query(request.query_params, QUERIES[f"{C}/agents/{{agent}}/versions"])["key"]
        if key is None:
            raise ValidationError("key is required")
        found = await blocking(view.versions, request.path_params["agent"], key)
        return json_response({"versions": [shapes.record(r) for r in found]})

    @endpoint
    async def record(self, request: Request) -> Response:
        view = await self.view(request)
        q = _query(request, f"{C}/records/{{ref}}")
        limit = q["limit"]
        reads = q["console_reads"] or "collapse"
        found, page = await blocking(
            view.lineage, request.path_params["ref"], q["before"] or None, limit, reads == "show"
        )
        return json_response(
            {
                "record": shapes.record(found, full=True),
                "lineage": shapes.lineage(page, limit, reads == "show"),
            }
        )

    @endpoint
    async def search(self, request: Request) -> Response:
        view = await self.view(request)
        body = await read_json(request, MAX_BODY_BYTES)
        query = body.get("query", "")
        max_results = body.get("max_results", 10)
        hits = await blocking(view.search, request.path_params["agent"], query, max_results)
        return json_response({"query": query, "results": [shapes.hit(h) for h in hits]})

    @endpoint
    async def sessions(self, request: Request) -> Response:
        view = await self.view(request)
        q = _query(request, f"{C}/sessions")
        limit = q["limit"]
        after = shapes.decode_cursor(q["after"], (int, str))
        found = await blocking(view.sessions, q["agent"], after, limit, q["one_shot"] == "show")
        return json_response(shapes.sessions_page(found, limit, view.store.compartments.names_of))

    @endpoint
    async def audit(self, request: Request) -> Response:
        view = await self.view(request)
        q = _query(request, f"{C}/audit")
        limit = q["limit"]
        rows = await blocking(view.audit_log, q["before"] or None, limit)
        return json_response(shapes.audit_page(rows, limit))

    @endpoint
    async def verify(self, request: Request) -> Response:
        bad = await blocking((await self.view(request)).verify)
        return json_response({"intact": True} if bad is None else {"intact": False, "first_bad_seq": bad})

    # actions ----------------------------------------------------------------------------------
    @endpoint
    async def delete(self, request: Request) -> Response:
        """Soft-delete one version through the agent's own delete (policy gate and audit included)."""
        view = await self.view(request)
        _confirmed(await read_json(request, MAX_BODY_BYTES))
        principal = principal_of(request)

        def act() -> str:
            found = view.record(request.path_params["ref"])
            if found.state in ("deleted", "expired"):
                raise NotFound(f"record {found.ref} is already {found.state}")
            session = view.session_at(found.memory.agent_id, found.memory.level)
            text = execute(
                session,
                "memory_delete",
                {"key": found.memory.key},
                policy=self.state.policy_for(principal),
                profile=TRIGGERFISH,
                origin="console",
            )
            assert text is not None
            return text

        return from_tool_text(await blocking(act))

    @endpoint
    async def restore(self, request: Request) -> Response:
        view = await self.view(request)
        _confirmed(await read_json(request, MAX_BODY_BYTES))
        restored = await blocking(view.restore, request.path_params["ref"])
        return json_response({"restored": True, **shapes.memory(restored, full=False)})

    @endpoint
    async def purge(self, request: Request) -> Response:
        view = await self.view(request)
        body = await read_json(request, MAX_BODY_BYTES)
        _confirmed(body)
        before = parse_time(body.get("before"), "before", naive_is_utc=False)
        agent = body.get("agent") or None
        purged = await blocking(view.purge, before, agent)
        return json_response(
            {
                "purged": int(purged),
                "before": before.isoformat(),
                "erased": getattr(purged, "erased", True),
                "remaining": getattr(purged, "remaining", ""),
            }
        )

    @endpoint
    async def export(self, request: Request) -> Response:
        """Every live version of one agent within the clearance, streamed as JSON Lines."""
        view = await self.view(request)
        read_query(request.query_params, QUERIES[f"{C}/agents/{{agent}}/export"])
        agent = request.path_params["agent"]
        view.query(agent)  # checks the agent id before the stream starts
        lines = view.export(agent)

        def chunks() -> Iterator[bytes]:
            for line in dump_lines(lines):
                yield line.encode("utf-8")

        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in agent)[:64] or "agent"
        return StreamingResponse(
            chunks(),
            media_type="application/x-ndjson",
            headers={
                "Content-Disposition": f'attachment; filename="stratamem-{safe}-{view.clearance.name}.jsonl"'
            },
        )

    # optional parts of a store -----------------------------------------------------------------
    @endpoint
    async def usage(self, request: Request) -> Response:
        view = await self.view(request)
        read_query(request.query_params, QUERIES[f"{C}/usage"])
        return json_response(await blocking(extensions.usage, view, request.query_params))

    @endpoint
    async def graph(self, request: Request) -> Response:
        view = await self.view(request)
        read_query(request.query_params, QUERIES[f"{C}/graph"])
        return json_response(await blocking(extensions.graph, view, request.query_params))

    @endpoint
    async def graph_node(self, request: Request) -> Response:
        view = await self.view(request)
        read_query(request.query_params, QUERIES[f"{C}/graph/node"])
        return json_response(await blocking(extensions.graph_node, view, request.query_params))

    # declassification (``stratamem.declassify``): the one way data moves down -------------------
    async def _declassifying(self, request: Request) -> tuple[OperatorView, dict[str, Any]]:
        """A console at RESTRICTED (a declassification reads and writes across labels) and a confirmed body;
        the acting operator is the signed-in principal, so a second operator is a second sign-in."""
        view = await self.view(request)
        if view.clearance != Level.RESTRICTED:
            raise PolicyBlocked(
                "declassification moves records between labels; open the console at RESTRICTED"
            )
        body = await read_json(request, MAX_BODY_BYTES)
        _confirmed(body)
        return view, body

    @endpoint
    async def declassify(self, request: Request) -> Response:
        view, body = await self._declassifying(request)
        unknown = set(body) - {"agent", "key", "from", "to", "reason", "replacement", "confirm"}
        if unknown:
            raise ValidationError(
                f"unknown field(s) {', '.join(sorted(unknown))}: an approval is a second operator's POST "
                "/v1/console/declassify/{id}/approve"
            )
        args: list[Any] = [body.get(name) for name in ("agent", "key", "from", "to", "reason")]
        self._within(view, Label.parse(body.get("from")))
        found = await blocking(
            lambda: self.state.store.declassify(*args, actor=view.actor, replacement=body.get("replacement"))
        )
        return json_response(found.to_dict(), 201)

    @endpoint
    async def approve(self, request: Request) -> Response:
        """Perform a pending request: the signed-in operator is the approver (not the one who asked)."""
        return await self._decide(request, self.state.store.approve_declassification)

    @endpoint
    async def deny(self, request: Request) -> Response:
        return await self._decide(request, self.state.store.deny_declassification)

    async def _decide(self, request: Request, decide: Callable[[int, str], Declassification]) -> Response:
        view, _ = await self._declassifying(request)
        request_id = request.path_params["request_id"]
        asked = await blocking(self.state.store.declassifier.request, request_id)
        self._within(view, asked.from_label)
        found = await blocking(decide, request_id, view.actor)
        return json_response(found.to_dict())

    def _within(self, view: OperatorView, label: Label) -> None:
        """A console acts on records within its own label only: one opened without a record's compartment
        may not move that record (NOT_FOUND, as for a record it cannot see)."""
        if not reads(view.clearance_code, self.state.store.compartments.encode(label)):
            raise NotFound(f"no record within {view.label.name} at {label.name}")

    @endpoint
    async def declassifications(self, request: Request) -> Response:
        view = await self.view(request)
        if view.clearance != Level.RESTRICTED:
            raise PolicyBlocked("the declassification register is read at RESTRICTED; open the console there")
        q = _query(request, f"{C}/declassify")
        page = self.state.store.declassifications
        found, more = await blocking(lambda: page(q["status"], limit=q["limit"], before=q["before"] or None))
        # a page holds only rows within the console's label (a page may be short; the cursor still moves on)
        encode = self.state.store.compartments.encode
        shown = [f for f in found if reads(view.clearance_code, encode(f.from_label))]
        return json_response({"declassifications": [f.to_dict() for f in shown], "next_before": more})
