"""Relevance floor for ``[Memory context]`` recall, measured on LoCoMo (../shared/data/locomo-dev.json).

Run: ``python bench/bench_recall_floor.py``. Each conversation is stored as one
agent (one memory per dialogue turn, as in bench_core). For a floor setting we
report, over each conversation's own questions, evidence recall@4 of what
recall would inject (top 4 after the floor), and over the *other*
conversation's questions (unrelated to this store) the share of entries the
floor drops. The default floor must drop unrelated entries while losing at
most 1 point of recall@4. Nothing here asserts on time.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import stratamem as sm
from stratamem.turn.context import ContextConfig, select_entries
from stratamem.turn.recall import term_coverage


def data_file() -> Path:
    for base in Path(__file__).resolve().parents:
        candidate = base / "shared" / "data" / "locomo-dev.json"
        if candidate.exists():
            return candidate
    raise SystemExit("locomo-dev.json not found under any parent's shared/data")


def turns(sample: dict) -> dict[str, str]:
    conv = sample["conversation"]
    out = {}
    for name, value in conv.items():
        if re.fullmatch(r"session_\d+", name):
            for t in value:
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [image: {t['blip_caption']}]"
                out[t["dia_id"]] = text
    return out


def gold(qa: dict, known: set[str]) -> set[str]:
    ids = set()
    for raw in qa.get("evidence", []):
        for part in re.split(r"[;,]\s*", raw):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m and f"D{m.group(1)}:{m.group(2)}" in known:
                ids.add(f"D{m.group(1)}:{m.group(2)}")
    return ids


def main() -> None:
    samples = json.loads(data_file().read_text())
    now = datetime(2026, 1, 1, tzinfo=UTC)
    store = sm.open_store(":memory:", clock=lambda: now)
    sessions, questions = [], []
    for i, sample in enumerate(samples):
        agent = f"conv{i}"
        memories = turns(sample)
        session = store.session(agent)
        for dia, text in memories.items():
            session.save(dia, text)
        sessions.append(session)
        questions.append([(q["question"], gold(q, set(memories))) for q in sample["qa"]])
    # Scores with no floor: collect once, apply floors offline.
    config0 = ContextConfig(min_relevance=0.0, relative_floor=0.0, min_coverage=0.0, half_life_days=0)
    runs = []
    for i, session in enumerate(sessions):
        cover = lambda q: term_coverage(store.analyzer, q)  # noqa: E731
        own = [(session.search(q, max_results=16), g, cover(q)) for q, g in questions[i] if g]
        other = [(session.search(q, max_results=16), cover(q)) for q, _ in questions[1 - i]]
        runs.append((own, other))
    print("min_relevance  min_coverage  recall@4  unrelated_dropped  related_entries")
    settings = (
        [(a / 2, 0.0) for a in range(0, 13, 2)]
        + [(0.0, c / 100) for c in (10, 15, 20, 21, 25, 30, 40, 50)]
        + [(3.75, 0.0), (3.0, 0.2), (2.0, 0.24), (3.0, 0.24)]
    )
    for absolute, minimum in settings:
        config = ContextConfig(
            min_relevance=absolute, relative_floor=0.0, min_coverage=minimum, half_life_days=0
        )
        recall_sum = n = 0
        kept_related = 0
        unrelated_before = unrelated_after = 0
        for own, other in runs:
            for hits, g, cover in own:
                chosen = select_entries(hits, config, now, include_conversation=True, coverage=cover)
                kept_related += len(chosen)
                recall_sum += len({m.key for m in chosen} & g) / len(g)
                n += 1
            for hits, cover in other:
                unrelated_before += len(select_entries(hits, config0, now, include_conversation=True))
                unrelated_after += len(
                    select_entries(hits, config, now, include_conversation=True, coverage=cover)
                )
        dropped = 1 - unrelated_after / unrelated_before if unrelated_before else 0.0
        print(
            f"{absolute:13.2f}  {minimum:12.2f}  {recall_sum / n:8.4f}  {dropped:17.1%}  {kept_related / n:15.2f}"
        )
    default = ContextConfig()
    print(f"default: min_relevance={default.min_relevance} min_coverage={default.min_coverage}")


if __name__ == "__main__":
    main()
