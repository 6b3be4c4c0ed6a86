"""Bulk writes (storage/sqlite/new_keys.py, the batch analyzer, one-pass audit sealing) store exactly what
one-by-one writes store."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import unicodedata
from datetime import UTC, datetime

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import stratamem as sm
from stratamem import text as text_module
from stratamem.audit import GENESIS, AuditDraft, event_hash, seal_many
from stratamem.levels import Level
from stratamem.storage.sql.rows import event_to_row, json_strings
from stratamem.text import Analyzer, tokens
from stratamem.validation import _has_control

WORDS = [
    "harbour",
    "lisbon",
    "ships",
    "shipping",
    "running",
    "runs",
    "café",
    "Ünïcode",
    "東京タワー",
    "x" * 80,
]


def index_rows(conn: sqlite3.Connection) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """Postings, document frequencies (tail included) and partition counts, by key rather than row id."""
    keys = dict(conn.execute("SELECT id, key FROM memories"))
    postings = sorted(
        (t, keys[m], tf, a, lvl, n) for t, m, tf, a, lvl, n in conn.execute("SELECT * FROM postings")
    )
    if conn.execute("SELECT name FROM sqlite_master WHERE name = 'postings_tail'").fetchone():
        postings = sorted(
            postings
            + [
                (t, keys[m], tf, a, lvl, n)
                for t, m, tf, a, lvl, n in conn.execute(
                    "SELECT term, memory_id, tf, agent_id, level, length FROM postings_tail"
                )
            ]
        )
    df: dict[tuple, int] = {}
    for t, a, lvl, n in conn.execute("SELECT term, agent_id, level, df FROM term_stats"):
        df[(t, a, lvl)] = df.get((t, a, lvl), 0) + n
    for a, lvl, delta, terms in conn.execute("SELECT agent_id, level, delta, terms FROM term_deltas"):
        for t in terms.split(" "):
            df[(t, a, lvl)] = df.get((t, a, lvl), 0) + delta
    for t, a, lvl in conn.execute("SELECT term, agent_id, level FROM postings_tail"):  # a document per row
        df[(t, a, lvl)] = df.get((t, a, lvl), 0) + 1
    parts = sorted(conn.execute("SELECT agent_id, level, n, total_len FROM part_stats"))
    return postings, sorted((k, v) for k, v in df.items() if v), parts


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
batches = st.lists(
    st.tuples(st.integers(0, 12), texts, st.lists(st.sampled_from(["a", "b", "Ship"]), max_size=2)),
    min_size=2,
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=batches, second=batches)
def test_a_batch_stores_what_saving_one_by_one_stores(first, second):
    """Fresh keys take the bulk path, repeated or live keys the one-by-one path: same rows either way."""
    stores = [sm.open_store(":memory:"), sm.open_store(":memory:")]
    try:
        for batch in (first, second):
            many = [{"key": f"k{k}", "content": c, "tags": t} for k, c, t in batch]
            stores[0].session("a").save_many(many)
            for item in many:
                stores[1].session("a").save(item["key"], item["content"], item["tags"])
        views = []
        for store in stores:
            s = store.session("a")
            views.append(
                (
                    [(m.key, m.content, m.tags, m.level) for m in s.list()],
                    [(h.memory.key, h.score) for h in s.search("harbour ships café", 10)],
                    index_rows(store.backend._conn),
                )
            )
            assert store.verify_audit() is None
        assert views[0] == views[1]
    finally:
        for store in stores:
            store.close()


@given(
    st.lists(st.tuples(st.text(max_size=30), st.text(max_size=60), st.lists(st.text(max_size=8), max_size=3)))
)
def test_batch_analysis_equals_one_document_at_a_time(docs):
    for languages in (("english",), ("english", "french")):
        analyzer = Analyzer(languages)
        one_by_one = []
        for key, content, tags in docs:
            words = tokens(key) + tokens(content)
            for tag in tags:
                words.extend(tokens(tag))
            one_by_one.append((sorted(analyzer._stems(words)), len(words)))
        batch = analyzer.document_terms_many(docs)
        assert [(sorted(c.elements()), n) for c, n in batch] == one_by_one


_DOCS = st.lists(
    st.tuples(
        st.text(max_size=30),
        st.text(alphabet=st.sampled_from("ab é東京 Ü_.\n") | st.characters(), max_size=200),
        st.lists(st.text(max_size=8), max_size=3),
    ),
    min_size=1,
    max_size=4,
)


@given(_DOCS)
@example([("k", "running runs " * 300 + "ran", ["tag"])])  # over ONE_PASS_WORDS: the batch's way
def test_one_document_gets_exactly_its_terms_in_a_batch(docs):
    """A single save's analysis (one document, stemmed as it comes) equals the batch's, order of terms included."""
    for languages in (("english",), ("english", "french")):
        analyzer = Analyzer(languages)
        batch = analyzer.document_terms_many(docs)
        for doc, (counts, length) in zip(docs, batch, strict=True):
            alone, alone_length = analyzer.document_terms(*doc)
            assert (list(alone.items()), alone_length) == (list(counts.items()), length)


_LONG_WORDS = st.lists(st.text(alphabet=st.sampled_from("aZé東9"), min_size=1, max_size=150), max_size=5)


@given(st.text() | _LONG_WORDS.map(" ".join) | _LONG_WORDS.map("".join).map(str.upper))
@example("a" * 64)
@example("b " + "a" * 65)
@example("É" * 65 + " x")
@example("東京" + "z" * 66)
def test_tokens_fast_paths_equal_the_general_fold(text):
    """ASCII text is lower-cased and text without CJK split in one pass; both equal the general path."""
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    folded = unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not "\u0300" <= ch <= "\u036f"))
    general: list[str] = []
    for word in text_module._WORD.findall(folded):
        parts = text_module._split_cjk(word) if text_module._CJK.search(word) else [word]
        general.extend(w[: text_module.MAX_TOKEN_CHARS] for w in parts)
    assert tokens(text) == general


def test_control_characters_are_exactly_unicode_category_cc():
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        assert _has_control(f"a{ch}b") == (unicodedata.category(ch) == "Cc"), hex(code)


@given(
    st.lists(
        st.tuples(
            st.text(max_size=10),
            st.lists(st.text(max_size=5), max_size=2),
            st.dictionaries(st.text(max_size=4), st.integers()),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_one_pass_sealing_equals_sealing_one_by_one(drafts):
    now = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    made = [
        AuditDraft("save", "s1", agent, Level.INTERNAL, tuple(keys), (Level.PUBLIC,), ("lin",), detail=detail)
        for agent, keys, detail in drafts
    ]
    events = seal_many(7, now, made, GENESIS)
    prev = GENESIS
    for seq, (event, draft) in enumerate(zip(events, made, strict=True), 7):
        assert event.seq == seq and event.prev_hash == prev
        assert event.hash == event_hash(seq, now, draft, prev)
        canonical = json.dumps(
            {
                "seq": seq,
                "time": now.isoformat(),
                "session": "s1",
                "agent": draft.agent_id,
                "taint": "INTERNAL",
                "op": "save",
                "keys": list(draft.keys),
                "levels": ["PUBLIC"],
                "lineage": ["lin"],
                "outcome": "ok",
                "detail": draft.detail,
                "prev": prev,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        assert event.hash == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        row = event_to_row(event)
        assert row[6] == json.dumps(list(draft.keys)) == json_strings(draft.keys)
        assert row[10] == json.dumps(draft.detail, sort_keys=True)
        prev = event.hash
