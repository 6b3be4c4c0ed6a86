"""LoCoMo dev as a user would store it: each turn saved with when it was said and the turn before it.

Run: ``python bench/bench_locomo.py`` (needs ``stratamem[semantic]``; ``--no-scifact`` skips SciFact).
Each conversation of ``../shared/data/locomo-dev.json`` is one agent; every turn is one memory saved through
the public API, ``session.save_many`` with ``occurred_at`` (the session's date and time, turns a minute
apart) and ``context`` (the previous turn of the same session, for the embedding only). A second store holds
the same turns without either field, so the difference is measured in the same run. For every question
(the raw question as query) it prints evidence recall@5/@10 overall and recall@10 by LoCoMo category
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial), per search mode; then SciFact
nDCG@10 (train claims, 5,183 abstracts, no context or dates) per mode. Quality does not depend on load.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_core as core
import bench_semantic

import stratamem as sm

MODES = ("lexical", "semantic", "hybrid")
CATEGORIES = ("1", "2", "3", "4", "5")


def session_time(text: str) -> datetime:
    """LoCoMo's ``1:56 pm on 8 May, 2023`` as an aware UTC time."""
    return datetime.strptime(" ".join(text.replace(",", " ").split()), "%I:%M %p on %d %B %Y").replace(
        tzinfo=UTC
    )


def conversation_items(sample: dict[str, Any], with_fields: bool) -> list[dict[str, Any]]:
    """One ``save_many`` item per turn: key = dia_id, ``speaker: text [image: caption]`` as content."""
    conversation, items = sample["conversation"], []
    for name, turns in conversation.items():
        if not (re.fullmatch(r"session_\d+", name) and isinstance(turns, list)):
            continue
        start, previous = session_time(conversation[f"{name}_date_time"]), None
        for i, turn in enumerate(turns):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            item: dict[str, Any] = {"key": turn["dia_id"], "content": text, "category": "conversation"}
            if with_fields:
                item["occurred_at"] = start + timedelta(minutes=i)
                if previous:
                    item["context"] = previous
            items.append(item)
            previous = text
    return items


def locomo(tmp: str, with_fields: bool) -> dict[str, dict[str, float]]:
    """Recall per mode (``r@5``, ``r@10``, ``r@10/cat<N>``) over every question with evidence."""
    samples = core.json.loads((core.DATA / "locomo-dev.json").read_text(encoding="utf-8"))
    name = "fields" if with_fields else "plain"
    store = sm.open_store(str(Path(tmp) / f"locomo-{name}.db"), search_mode="hybrid", embedder="minilm")
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    questions = []
    for sample in samples:
        session = store.session(sample["sample_id"])
        items = conversation_items(sample, with_fields)
        session.save_many(items)
        known = {item["key"] for item in items}
        for qa in sample["qa"]:
            gold = core._evidence_ids(qa.get("evidence", []), known)
            if gold:
                questions.append((session, qa["question"], gold, str(qa["category"])))
    store.reindex()
    for session, question, gold, category in questions:
        for mode in MODES:
            for expand in (False, True):
                keys = [h.memory.key for h in session.search(question, 10, mode=mode, expand=expand)]
                name = f"{mode}+rm3" if expand else mode
                for metric, k in (("r@5", 5), ("r@10", 10)):
                    scores[name][metric].append(core.recall_at(keys, gold, k))
                scores[name][f"r@10/cat{category}"].append(core.recall_at(keys, gold, 10))
    store.close()
    return {mode: {k: statistics.mean(v) for k, v in table.items()} for mode, table in scores.items()}


def scifact(tmp: str) -> dict[str, float]:
    """SciFact train nDCG@10 per mode, with and without expansion (abstracts as ``title. text``)."""
    corpus = core.scifact_corpus()
    queries, qrels = core.scifact_queries()
    store = sm.open_store(str(Path(tmp) / "scifact.db"), search_mode="hybrid", embedder="minilm")
    session = store.session("scifact")
    for start in range(0, len(corpus), 1000):
        session.save_many(
            [
                {"key": doc_id, "content": f"{title}. {text}" if title else text}
                for doc_id, title, text in corpus[start : start + 1000]
            ]
        )
    store.reindex()
    out: dict[str, list[float]] = defaultdict(list)
    for qid, text in queries:
        for mode in MODES:
            for expand in (False, True):
                keys = [h.memory.key for h in session.search(text, 10, mode=mode, expand=expand)]
                out[f"{mode}+rm3" if expand else mode].append(core.ndcg_at(keys, qrels[qid]))
    store.close()
    return {name: statistics.mean(values) for name, values in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-scifact", action="store_true", help="skip SciFact nDCG@10")
    args = parser.parse_args()
    print(core.machine())
    with tempfile.TemporaryDirectory() as tmp:
        print("\nLoCoMo dev (two conversations, questions with evidence), recall through session.search")
        print(
            f"{'store':>8} {'mode':>9} {'r@5':>6} {'r@10':>6}  " + " ".join(f"cat{c:>2}" for c in CATEGORIES)
        )
        for with_fields in (False, True):
            for mode, t in locomo(tmp, with_fields).items():
                cats = " ".join(f"{t.get(f'r@10/cat{c}', 0.0):5.3f}" for c in CATEGORIES)
                label = "fields" if with_fields else "plain"
                print(f"{label:>8} {mode:>9} {t['r@5']:6.3f} {t['r@10']:6.3f}  {cats}", flush=True)
        if not args.no_scifact:
            result = bench_semantic.scifact(tmp)
            print(
                f"\nSciFact train ({result['queries']} claims) nDCG@10: "
                + ", ".join(f"{mode} {value:.4f}" for mode, value in result["ndcg"].items())
            )


if __name__ == "__main__":
    main()
