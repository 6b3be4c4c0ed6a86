"""A save on PostgreSQL in one round trip: the server-side function ``sm_save`` (migration 8).

A save used to be a dozen statements (bind the session, take the key locks,
read the old version, drop its postings, write the version, postings and
statistics, refresh the shadowing flags, lock the audit head, append the
event, COMMIT), each a round trip. ``sm_save`` does all of it inside the
server, called as one autocommit statement: the statement's own transaction
commits before the answer comes back, so an acknowledged save is committed
(and durable as ``synchronous_commit`` says). A batch is the same call with
longer arrays: all of it or none.

It is ``SECURITY INVOKER``: it runs as the calling application role, binds
the transaction to the session it reads (``FOR SHARE``, as before) and every
row it touches passes the same row-level security policies as the statements
it replaces (``pg_schema``). Only the shadowing refresh runs with the owner's
rights, through the SECURITY DEFINER ``sm_refresh_shadowable`` it always used.

What stays in Python: stemming (the store's ``Analyzer``, so both backends
index the same terms) and fresh lineage ids. Terms travel as one
space-separated string per document (terms never contain whitespace), not as
one array element per posting, which keeps the client's encoding cost per
document. Each version records its terms (``memories.terms``), so replacing
it drops exactly its postings without re-reading and re-stemming its content.

The audit event is hashed in SQL with the exact canonical JSON of
``audit.event_hash`` (sorted keys, no spaces, non-ASCII kept): the only
strings it encodes itself are the agent, key and lineage ids, which carry no
control characters (``validation.check_id``/``check_key``), and for those
PostgreSQL's ``to_json`` and Python's ``json.dumps(..., ensure_ascii=False)``
write the same bytes; the session id and the time are encoded by Python.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from ...errors import NotFound, StorageError
from ...models import Memory
from ...text import Analyzer
from ..records import MemoryDraft
from ..sql.rows import from_us, to_us
from . import save_one
from .rows import enc, row_to_memory
from .save_set import BIND_SESSION

NO_SESSION = "SM001"
NO_AUDIT_HEAD = "SM002"

_FUNCTION = (
    r"""
CREATE OR REPLACE FUNCTION sm_save(
    p_session text, p_session_json text, p_now bigint, p_time text, p_store_lock bigint, p_key_space integer,
    p_keys text[], p_contents text[], p_tags text[], p_categories text[], p_expires bigint[],
    p_lineages text[], p_lengths integer[], p_terms text[], p_tfs text[], p_event_keys text[])
RETURNS SETOF memories LANGUAGE plpgsql SECURITY INVOKER AS $fn$
DECLARE
  v_agent text; v_taint smallint; v_peers text; v_level text;
  o_id bigint[]; o_key text[]; o_len integer[]; o_terms text[]; o_expired boolean[];
  w memories[]; v_n bigint; v_len bigint;
  v_seq bigint; v_first bigint; v_prev text; e_lineage text[]; a_prev text[] := '{}'; a_hash text[] := '{}';
BEGIN
"""
    + BIND_SESSION
    + r"""
  -- Writers of one (agent, key) queue; bulk operator actions exclude every writer (PostgresBackend).
  PERFORM pg_advisory_xact_lock_shared(p_store_lock);
  PERFORM count(pg_advisory_xact_lock(p_key_space, hashtext(o.k)))
     FROM (SELECT v_agent || chr(31) || u.k AS k FROM unnest(p_keys) AS u(k)
           ORDER BY (v_agent || chr(31) || u.k) COLLATE "C") AS o;

  -- The live versions these keys replace (an expired one is retired, as if deleted when it expired).
  SELECT coalesce(array_agg(m.id), '{}'), coalesce(array_agg(m.key), '{}'), coalesce(array_agg(m.length), '{}'),
         coalesce(array_agg(m.terms), '{}'),
         coalesce(array_agg(m.expires_us IS NOT NULL AND m.expires_us <= p_now), '{}')
    INTO o_id, o_key, o_len, o_terms, o_expired
    FROM memories m
   WHERE m.agent_id = v_agent AND m.key = ANY (p_keys) AND m.level = v_taint AND m.deleted_us IS NULL;
  IF cardinality(o_id) > 0 THEN
    IF array_position(o_terms, NULL) IS NOT NULL THEN
      -- Written before the terms were recorded: recover them from the postings (slow, once per version).
      SELECT array_agg(coalesce(u.t, (SELECT coalesce(string_agg(p.term, ' '), '') FROM postings p
                                       WHERE p.agent_id = v_agent AND p.level = v_taint AND p.memory_id = u.i))
                       ORDER BY u.n)
        INTO o_terms FROM unnest(o_id, o_terms) WITH ORDINALITY AS u(i, t, n);
    END IF;
    DELETE FROM postings p
     USING (SELECT u.i, unnest(string_to_array(u.t, ' ')) AS term FROM unnest(o_id, o_terms) AS u(i, t)) AS d
     WHERE p.term = d.term AND p.agent_id = v_agent AND p.level = v_taint AND p.memory_id = d.i;
    UPDATE memories m SET deleted_us = m.expires_us, shadowable = false, terms = NULL
      FROM unnest(o_id, o_expired) AS u(i, x) WHERE m.id = u.i AND u.x;
  END IF;

  -- The versions: a live one at this level is updated in place (created time and lineage kept).
  WITH inp AS (
         SELECT * FROM unnest(p_keys, p_contents, p_tags, p_categories, p_expires, p_lineages, p_lengths, p_terms)
                    AS u(key, content, tags, category, expires_us, lineage_id, length, terms)),
       live AS (SELECT * FROM unnest(o_id, o_key, o_expired) AS o(id, key, expired) WHERE NOT o.expired),
       up AS (
         UPDATE memories m SET content = i.content, tags = i.tags, category = i.category, session_id = p_session,
                updated_us = p_now, expires_us = i.expires_us, length = i.length, terms = i.terms
           FROM inp i JOIN live l ON l.key = i.key
          WHERE m.id = l.id RETURNING m),
       ins AS (
         INSERT INTO memories AS n (agent_id, key, level, content, tags, category, session_id, created_us,
                                    updated_us, lineage_id, expires_us, length, terms)
         SELECT v_agent, i.key, v_taint, i.content, i.tags, i.category, p_session, p_now, p_now, i.lineage_id,
                i.expires_us, i.length, i.terms
           FROM inp i WHERE NOT EXISTS (SELECT 1 FROM live l WHERE l.key = i.key)
         RETURNING n)
  SELECT coalesce(array_agg(x.r), '{}') INTO w FROM (SELECT up.m AS r FROM up UNION ALL SELECT ins.n FROM ins) AS x;

  INSERT INTO postings (term, agent_id, level, memory_id, tf, length)
  SELECT t.term, v_agent, v_taint, r.id, t.tf::integer, r.length
    FROM unnest(w) AS r JOIN unnest(p_keys, p_tfs) AS f(key, tfs) ON f.key = r.key,
         unnest(string_to_array(r.terms, ' '), string_to_array(f.tfs, ' ')) AS t(term, tf)
   ORDER BY t.term COLLATE "C";

  -- Document frequencies, netted over old and new versions, rows locked in one order; zeros removed.
  INSERT INTO term_stats AS ts (term, agent_id, level, df)
  SELECT d.term, v_agent, v_taint, d.df FROM (
      SELECT x.term, sum(x.d) AS df FROM (
          SELECT unnest(string_to_array(t, ' ')) AS term, -1 AS d FROM unnest(o_terms) AS t
          UNION ALL SELECT unnest(string_to_array(r.terms, ' ')), 1 FROM unnest(w) AS r) AS x
      GROUP BY x.term) AS d
   WHERE d.df <> 0 ORDER BY d.term COLLATE "C"
  ON CONFLICT (term, agent_id, level) DO UPDATE SET df = ts.df + excluded.df;
  IF cardinality(o_id) > 0 THEN
    DELETE FROM term_stats ts
     WHERE ts.agent_id = v_agent AND ts.level = v_taint AND ts.df <= 0
       AND ts.term IN (SELECT unnest(string_to_array(t, ' ')) FROM unnest(o_terms) AS t);
  END IF;

  SELECT count(*) - cardinality(o_id), coalesce(sum(r.length), 0) - (SELECT coalesce(sum(l), 0) FROM unnest(o_len) AS l)
    INTO v_n, v_len FROM unnest(w) AS r;
  IF v_n <> 0 OR v_len <> 0 THEN
    INSERT INTO part_stats AS ps (agent_id, level, n, total_len) VALUES (v_agent, v_taint, v_n, v_len)
    ON CONFLICT (agent_id, level) DO UPDATE SET n = ps.n + excluded.n, total_len = ps.total_len + excluded.total_len;
  END IF;

  PERFORM sm_refresh_shadowable(array_fill(v_agent, ARRAY[cardinality(p_keys)]), p_keys);
  INSERT INTO memory_vectors (memory_id, agent_id, level, live)
  SELECT r.id, v_agent, v_taint, true FROM unnest(w) AS r
  ON CONFLICT (memory_id) DO UPDATE SET live = true, model = NULL, scale = NULL, vec = NULL;

  -- One event per item, in order, chained from the head (locked: appends from every process queue here).
  SELECT h.seq, h.hash INTO v_seq, v_prev FROM audit_head h FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'stratamem: the audit head is missing' USING ERRCODE = 'SM002';
  END IF;
  v_first := v_seq;
  SELECT coalesce(array_agg(r.lineage_id ORDER BY e.n), '{}') INTO e_lineage
    FROM unnest(p_event_keys) WITH ORDINALITY AS e(key, n) JOIN unnest(w) AS r ON r.key = e.key;
  FOR i IN 1 .. cardinality(p_event_keys) LOOP
    v_seq := v_seq + 1;
    a_prev := a_prev || v_prev;
    v_prev := encode(sha256(convert_to(
        '{"agent":' || to_json(v_agent)::text || ',"detail":{},"keys":[' || to_json(p_event_keys[i])::text
        || '],"levels":["' || v_level || '"],"lineage":[' || to_json(e_lineage[i])::text
        || '],"op":"save","outcome":"ok","prev":"' || v_prev || '","seq":' || v_seq || ',"session":'
        || p_session_json || ',"taint":"' || v_level || '","time":' || p_time || '}', 'UTF8')), 'hex');
    a_hash := a_hash || v_prev;
  END LOOP;
  INSERT INTO audit (seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail,
                     prev_hash, hash)
  SELECT v_first + e.n, p_now, p_session, v_agent, v_taint, 'save', json_build_array(e.key)::text,
         '["' || v_level || '"]', json_build_array(e.lineage)::text, 'ok', '{}', e.prev, e.hash
    FROM unnest(p_event_keys, e_lineage, a_prev, a_hash) WITH ORDINALITY AS e(key, lineage, prev, hash, n);
  UPDATE audit_head SET seq = v_seq, hash = v_prev;

  RETURN QUERY SELECT * FROM unnest(w);
END
$fn$"""
)

_TYPES = (
    "text, text, bigint, text, bigint, integer, text[], text[], text[], text[], bigint[], text[], integer[], "
    "text[], text[], text[]"
)

# Version 8: each version records its terms (NULL: unknown, recovered from the postings when needed), and
# the save function. Live versions get their terms from the postings they already have.
MIGRATION = [
    'ALTER TABLE memories ADD COLUMN IF NOT EXISTS terms text COLLATE "C"',
    """UPDATE memories m SET terms = p.terms
         FROM (SELECT memory_id, string_agg(term, ' ') AS terms FROM postings GROUP BY memory_id) AS p
        WHERE m.id = p.memory_id AND m.deleted_us IS NULL""",
    "UPDATE memories SET terms = '' WHERE terms IS NULL AND deleted_us IS NULL",
    _FUNCTION,
    "GRANT EXECUTE ON FUNCTION sm_save(" + _TYPES + ") TO {app}",
]

# Parameters travel in binary (no quoting and escaping of every array element: a batch's arrays encode
# several times faster), each cast to the function's parameter type.
_CALL = "SELECT * FROM sm_save(" + ", ".join(f"%b::{t}" for t in _TYPES.split(", ")) + ")"
# One record (migration 10's ``sm_save_one``): scalars, which the client encodes far faster than arrays.
_CALL_ONE = "SELECT * FROM sm_save_one(" + ", ".join(f"%b::{t}" for t in save_one.TYPES.split(", ")) + ")"


def terms_text(terms: dict[str, int]) -> tuple[str, str]:
    """A document's terms and their frequencies as two space-separated strings (the form ``sm_save`` reads)."""
    return " ".join(terms), " ".join(map(str, terms.values()))


def save_many(
    conn: psycopg.Connection,
    analyzer: Analyzer,
    locks: tuple[int, int],
    session_id: str,
    drafts: Sequence[MemoryDraft],
    now: datetime,
    *,
    one: bool = True,
) -> list[Memory]:
    """One ``sm_save`` statement (on an autocommit connection: its own transaction); stored versions in input order.

    A single draft goes to ``sm_save_one`` (``pg_save_one``) instead, when the
    store has it (``one``).

    A key given twice ends as the later draft, as if saved one by one, with one
    audit event per draft. ``locks`` is the store lock and the key lock space.
    The parameters are built column by column, and the batch's words are
    stemmed once each (``Analyzer.document_terms_many``): this is the client's
    share of a batch, paid before the one round trip.
    """
    latest = list({d.key: d for d in drafts}.values())
    analysed = analyzer.document_terms_many((d.key, d.content, d.tags) for d in latest)
    texts = [terms_text(counts) for counts, _ in analysed]
    columns: list[list[Any]] = [
        [d.key for d in latest],
        [enc(d.content) for d in latest],
        [json.dumps(list(d.tags)) if d.tags else "[]" for d in latest],
        [d.category for d in latest],
        [to_us(d.expires_at) if d.expires_at else None for d in latest],
        [str(uuid.uuid4()) for _ in latest],
        [length for _, length in analysed],
        [terms for terms, _ in texts],
        [tfs for _, tfs in texts],
    ]
    now_us = to_us(now)
    head = (
        enc(session_id),
        json.dumps(session_id, ensure_ascii=False),
        now_us,
        # the time exactly as the chain's verifier reads it back (audit.event_hash over the stored microseconds)
        json.dumps(from_us(now_us).isoformat()),
        *locks,
    )
    if one and len(drafts) == 1:  # one key, one event: the same save as sm_save's, from scalars
        call, params = _CALL_ONE, (*head, *(column[0] for column in columns))
    else:
        call, params = _CALL, (*head, *columns, [d.key for d in drafts])
    try:
        rows = conn.execute(call, params).fetchall()
    except psycopg.DatabaseError as exc:
        if exc.sqlstate == NO_SESSION:
            raise NotFound(f"no session {session_id!r}") from None
        if exc.sqlstate == NO_AUDIT_HEAD:
            raise StorageError(
                "the audit log's head record is missing (tampering?): run 'stratamem audit verify "
                "--anchor FILE', then restore the row (seq, hash of the newest event)"
            ) from None
        raise
    stored = {row[2]: row_to_memory(row) for row in rows}
    return [stored[d.key] for d in drafts]
