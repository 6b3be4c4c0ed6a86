"""zeroclaw's ``knowledge`` tool: the knowledge graph in plain text, in the style of the memory tools.

Answers (documented choices):

- capture -> ``Captured node: <name> [<type>]``
- search -> ``Found N nodes:`` then ``- [type] name: text [NN%]`` lines (NN relative to the best hit), or
  ``No nodes found.``; text is the content and observations, cut at 300 characters.
- relate -> ``Related: <from> --<relation>--> <to>`` (``Already related: ...`` when it existed)
- neighbors -> ``Found N neighbors of <name>:`` then ``- [type] name (distance d, a --r--> b)``, or
  ``No neighbors found for: <name>``
- stats -> ``Knowledge graph: N nodes, M relations, K observations`` plus type and relation counts
- suggest -> ``Found N suggestions for <name>:`` then ``- [type] name (S shared neighbors, NN%)``, or
  ``No suggestions for: <name>``
- a node that is missing or not accessible -> ``No node found with name: <name>`` (the same for both)

Limits are clamped to 1..100 and depth to 1..3; bad arguments use the JSON error shape. A search,
neighbors or suggest listing longer than the store's answer budget ends after the last line that fits with
``more: use cursor=<cursor>``: the same call with ``cursor`` continues it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import PolicyBlocked, ValidationError
from ..graph.model import Edge, EdgeDraft, Node
from ..paging import decode_offset, encode_offset
from ..storage.sql.graph_read import NodeNotFound
from . import fit
from .graph_specs import KNOWLEDGE_ACTIONS
from .zeroclaw import percent

if TYPE_CHECKING:
    from ..session import Session

SUMMARY_CHARS = 300
NO_NODES = "No nodes found."


def refuse_quarantine(quarantine: bool) -> None:
    """QUARANTINE keeps flagged memories out of reads by a tag; graph records have no such tag, so refuse."""
    if quarantine:
        raise PolicyBlocked(
            "the write looks like it carries a secret or an exfiltration recipe; "
            "graph writes are not quarantined, they are refused"
        )


def _required(args: dict[str, Any], name: str) -> Any:
    if args.get(name) is None:
        raise ValidationError(f"missing required argument {name!r} for action {args['action']!r}")
    return args[name]


def summary(node: Node) -> str:
    text = "; ".join(t for t in (node.content, *(o.text for o in node.observations)) if t)
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _braced(text: str) -> str:
    """``text`` safe inside a ``str.format`` template (a name may hold braces)."""
    return text.replace("{", "{{").replace("}", "}}")


def arrow(edge: Edge) -> str:
    return f"{edge.source} --{edge.relation}--> {edge.target}"


def _capture(session: Session, args: dict[str, Any]) -> str:
    node = session.graph.capture(
        _required(args, "name"),
        args.get("type"),
        args.get("content") or "",
        args.get("tags") or (),
        args.get("observations") or (),
    )
    return f"Captured node: {node.name} [{node.type}]"


def _listed(session: Session, args: dict[str, Any], header: str, lines: list[str]) -> str:
    """``header`` (with ``{n}``) and the lines from the call's cursor on, within the answer budget."""
    offset = decode_offset(args["cursor"]) if args.get("cursor") is not None else 0
    return fit.lines(
        lambda n: header.format(n=n),
        lines[offset:],
        session.store.max_answer_chars,
        lambda n: encode_offset(offset + n),
    )


def _search(session: Session, args: dict[str, Any]) -> str:
    hits = session.graph.search(_required(args, "query"), args["limit"])
    if not hits:
        return NO_NODES
    best = hits[0].score
    lines = [f"- [{h.node.type}] {h.node.name}: {summary(h.node)} [{percent(h.score, best)}%]" for h in hits]
    return _listed(session, args, "Found {n} nodes:", lines)


def _relate(session: Session, args: dict[str, Any]) -> str:
    made = session.graph.relate_many([_edge(args)])
    edge, created = made[0]
    return f"{'Related' if created else 'Already related'}: {arrow(edge)}"


def _edge(args: dict[str, Any]) -> EdgeDraft:
    from ..graph.checks import edge_draft

    return edge_draft(
        _required(args, "from"), _required(args, "to"), _required(args, "relation"), args.get("note")
    )


def _neighbors(session: Session, args: dict[str, Any]) -> str:
    name = _required(args, "name")
    found = session.graph.neighbors(name, args.get("depth") or 1, args["limit"])
    if not found:
        return f"No neighbors found for: {name}"
    lines = [f"- [{n.node.type}] {n.node.name} (distance {n.distance}, {arrow(n.edge)})" for n in found]
    return _listed(session, args, "Found {n} neighbors of " + _braced(name) + ":", lines)


def _stats(session: Session, args: dict[str, Any]) -> str:
    st = session.graph.stats()
    lines = [f"Knowledge graph: {st.nodes} nodes, {st.edges} relations, {st.observations} observations"]
    if st.types:
        lines.append("Node types: " + ", ".join(f"{t} ({c})" for t, c in st.types))
    if st.relations:
        lines.append("Relation types: " + ", ".join(f"{r} ({c})" for r, c in st.relations))
    return "\n".join(lines)


def _suggest(session: Session, args: dict[str, Any]) -> str:
    name = _required(args, "name")
    found = session.graph.suggest(name, args["limit"])
    if not found:
        return f"No suggestions for: {name}"
    best = max((s.score for s in found), default=0.0)
    lines = [
        f"- [{s.node.type}] {s.node.name} ({s.shared_neighbors} shared neighbors, {percent(s.score, best)}%)"
        for s in found
    ]
    return _listed(session, args, "Found {n} suggestions for " + _braced(name) + ":", lines)


ACTIONS = {
    "capture": _capture,
    "search": _search,
    "relate": _relate,
    "neighbors": _neighbors,
    "stats": _stats,
    "suggest": _suggest,
}


def knowledge(session: Session, args: dict[str, Any], quarantine: bool) -> str:
    action = args.get("action")
    if action not in KNOWLEDGE_ACTIONS:
        raise ValidationError(f"action must be one of {', '.join(KNOWLEDGE_ACTIONS)}")
    refuse_quarantine(quarantine)
    try:
        return ACTIONS[action](session, args)
    except NodeNotFound as exc:
        return f"No node found with name: {exc.name}"


HANDLERS = {"knowledge": knowledge}
