"""BM25 over graph nodes, from statistics of the session's visible view only.

A node's document is its visible version (name, type, content, tags) plus
its visible observations. The storage layer gathers, for the query terms,
per-node term frequencies and document lengths over exactly what the session
may see, and the visible node count and total length; this module turns them
into scores with the memory search's formula and constants
(``stratamem.search.ranking``), summed as fixed-point integers so the order and the
scores do not depend on row order — two stores that differ only by invisible
records rank bit-identically. Ties are broken by name, then agent order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from ..search import ranking

NodeKey = tuple[str, str]  # (agent_id, name)


def score_nodes(
    n_docs: int,
    total_len: int,
    postings: Iterable[tuple[str, str, str, int]],
    lengths: Mapping[NodeKey, int],
    agents: Sequence[str],
) -> list[tuple[NodeKey, int]]:
    """Every matching node with its fixed-point score, best first.

    ``postings`` are (term, agent, name, tf) rows, one per visible node and
    term; ``lengths`` the visible document length of each of those nodes.
    """
    if n_docs <= 0:
        return []
    by_term: dict[str, list[tuple[NodeKey, int]]] = defaultdict(list)
    for term, agent, name, tf in postings:
        if tf > 0 and (agent, name) in lengths:
            by_term[term].append(((agent, name), tf))
    avgdl = total_len / n_docs if total_len > 0 else 1.0
    scores: dict[NodeKey, int] = defaultdict(int)
    for rows in by_term.values():
        weight = ranking.idf(n_docs, len(rows))
        for key, tf in rows:
            scores[key] += int(ranking.term_score(weight, tf, lengths[key], avgdl) * ranking.SCORE_SCALE)
    rank = {agent: i for i, agent in enumerate(agents)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0][1], rank.get(kv[0][0], len(rank))))
