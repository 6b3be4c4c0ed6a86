"""A save on PostgreSQL in one round trip: the client's call and the live server-side functions.

A save is one autocommit statement, ``SELECT * FROM sm_save(...)`` for a batch
or ``sm_save_one(...)`` for a single record: the statement's own transaction
binds the session, takes the key locks, replaces the old version's postings,
writes the version, postings and statistics, refreshes the shadowing flags and
appends the audit events, and commits before the answer comes back, so an
acknowledged save is committed (and durable as ``synchronous_commit`` says). A
batch is all of it or none.

Both functions are ``SECURITY INVOKER``: they run as the calling application
role, bind the transaction to the session they read (``FOR SHARE``) and every
row they touch passes the row-level security policies of ``migrations.py``.
Only the shadowing refresh runs with the owner's rights, through the SECURITY
DEFINER ``sm_refresh_shadowable`` (shared with deletes, imports and rebuilds).

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

``sm_save`` (the batch) does no per-row work that grows with the store: one
statement per table for the whole batch; document frequencies netted per
distinct term and upserted once each in ``COLLATE "C"`` order (two concurrent
batches lock the rows they share in one order and cannot deadlock on them);
the parts of each event's canonical JSON that do not depend on the previous
hash built set-based as a prefix and a suffix around ``"prev"`` (the keys are
sorted, so ``"prev"`` sits between ``"outcome"`` and ``"seq"``), leaving one
SHA-256 per event as the only loop, as a hash chain must be.
``sm_refresh_shadowable`` looks each distinct (agent, key) up through
``memories_live`` (a ``LATERAL ... OFFSET 0`` the planner cannot turn back into
a join over the table), so its cost follows the batch, not the store.

``sm_save_one`` does exactly what ``sm_save`` does for one key and one event —
same locks in the same order (session, store and key advisory locks, the
version, term rows in ``COLLATE "C"`` order, the partition, the audit head, so
single saves and batches cannot deadlock each other in a new way), same rows,
same row-level security, same audit bytes — from scalars, each statement a
single-row one (a plan made for many rows run over one costs executor start-up
on every save): work that is empty for a new key is skipped (the replaced
version's postings and statistics, the netting of old and new terms); an
update in place skips the shadowing refresh (the key's set of live levels is
unchanged); the partition's size is changed with a plain ``UPDATE`` and
inserted only when the partition is new. ``sm_save`` stays the path of a batch
and of a batch that names a key twice.

Labels (``stratamem.labels``): the session's taint is a label's integer, and every row a save writes is
stored at exactly that integer (the write policies accept nothing else); the level part names the
records' level in the audit event, the whole label its taint.

The text of these functions is what migration 14 installs (9 and 10 installed the
versions without occurred times and contexts, 12 those whose taint was a level alone): changing it means a
new migration (see ``migrations.py``).
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
from .rows import MEMORY_COLUMNS, enc, row_to_memory

NO_SESSION = "SM001"
NO_AUDIT_HEAD = "SM002"

# The start of every save function: the session, read and locked inside the transaction, binds the
# row-level security settings of what follows (its agent, peers and live taint).
BIND_SESSION = r"""  -- The session, read inside the transaction (a concurrent escalation waits or is seen), binds it.
  SELECT s.agent_id, s.taint, s.peers INTO v_agent, v_taint, v_peers FROM sessions s WHERE s.id = p_session FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'stratamem: no session' USING ERRCODE = 'SM001';
  END IF;
  PERFORM set_config('stratamem.taint', v_taint::text, true),
          set_config('stratamem.agents',
                     (ARRAY[v_agent] || ARRAY(SELECT jsonb_array_elements_text(v_peers::jsonb)))::text, true),
          set_config('stratamem.agent', v_agent, true),
          set_config('stratamem.operator', '', true);
  -- The taint is a label's integer (level | compartment bits << 2): its level names the stored records' level,
  -- and the label as the audit chain hashes it (``audit._taint_name``) names the events' taint.
  v_level := (ARRAY['PUBLIC', 'INTERNAL', 'CONFIDENTIAL', 'RESTRICTED'])[(v_taint & 3) + 1];
  v_label := v_level || CASE WHEN v_taint > 3 THEN '+0x' || to_hex(v_taint >> 2) ELSE '' END;
"""

REFRESH_SHADOWABLE = r"""
CREATE OR REPLACE FUNCTION sm_refresh_shadowable(p_agents text[], p_keys text[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
  UPDATE memories m SET shadowable = s.flag
    FROM (SELECT v.id, v.flag
            FROM (SELECT DISTINCT * FROM unnest(p_agents, p_keys)) AS k(agent_id, key)
            CROSS JOIN LATERAL (
                SELECT d.id, d.shadowable, d.level < max(d.level) OVER () AS flag
                  FROM memories d
                 WHERE d.agent_id = k.agent_id AND d.key = k.key AND d.deleted_us IS NULL
                   AND (sm_operator() OR d.agent_id = sm_agent())
                OFFSET 0) AS v
           WHERE v.shadowable IS DISTINCT FROM v.flag) AS s
   WHERE m.id = s.id;
END
$fn$"""

# The batch save (installed by migration 14; migrations 9's and 12's are frozen in ``frozen_saves``).
SM_SAVE = (
    r"""
CREATE OR REPLACE FUNCTION sm_save(
    p_session text, p_session_json text, p_now bigint, p_time text, p_store_lock bigint, p_key_space integer,
    p_keys text[], p_contents text[], p_tags text[], p_categories text[], p_expires bigint[],
    p_lineages text[], p_lengths integer[], p_terms text[], p_tfs text[], p_event_keys text[],
    p_occurred bigint[], p_contexts text[])
RETURNS SETOF memories LANGUAGE plpgsql SECURITY INVOKER AS $fn$
DECLARE
  v_agent text; v_taint bigint; v_peers text; v_level text; v_label text;
  o_id bigint[]; o_key text[]; o_len integer[]; o_terms text[]; o_expired boolean[];
  w memories[]; v_n bigint; v_len bigint;
  v_first bigint; v_prev text; v_events integer;
  e_key text[]; e_lineage text[]; e_pre text[]; e_suf text[]; a_prev text[]; a_hash text[];
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
         SELECT * FROM unnest(p_keys, p_contents, p_tags, p_categories, p_expires, p_lineages, p_lengths, p_terms,
                              p_occurred, p_contexts)
                    AS u(key, content, tags, category, expires_us, lineage_id, length, terms, occurred_us, context)),
       live AS (SELECT * FROM unnest(o_id, o_key, o_expired) AS o(id, key, expired) WHERE NOT o.expired),
       up AS (
         UPDATE memories m SET content = i.content, tags = i.tags, category = i.category, session_id = p_session,
                updated_us = p_now, expires_us = i.expires_us, length = i.length, terms = i.terms,
                occurred_us = i.occurred_us, context = i.context
           FROM inp i JOIN live l ON l.key = i.key
          WHERE m.id = l.id RETURNING m),
       ins AS (
         INSERT INTO memories AS n (agent_id, key, level, content, tags, category, session_id, created_us,
                                    updated_us, lineage_id, expires_us, length, terms, occurred_us, context)
         SELECT v_agent, i.key, v_taint, i.content, i.tags, i.category, p_session, p_now, p_now, i.lineage_id,
                i.expires_us, i.length, i.terms, i.occurred_us, i.context
           FROM inp i WHERE NOT EXISTS (SELECT 1 FROM live l WHERE l.key = i.key)
         RETURNING n)
  SELECT coalesce(array_agg(x.r), '{}') INTO w FROM (SELECT up.m AS r FROM up UNION ALL SELECT ins.n FROM ins) AS x;

  -- Postings: one row per (term, version), inserted in index order.
  INSERT INTO postings (term, agent_id, level, memory_id, tf, length)
  SELECT t.term, v_agent, v_taint, r.id, t.tf::integer, r.length
    FROM unnest(w) AS r JOIN unnest(p_keys, p_tfs) AS f(key, tfs) ON f.key = r.key,
         unnest(string_to_array(r.terms, ' '), string_to_array(f.tfs, ' ')) AS t(term, tf)
   ORDER BY t.term COLLATE "C";

  -- Document frequencies, netted per distinct term over old and new versions, each row upserted once,
  -- in one order (concurrent batches lock shared rows alike); zeros removed.
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

  -- One event per item, in order. Everything but the previous hash, built for all events at once: the
  -- canonical JSON of audit.event_hash (sorted keys) split around "prev". The sequence numbers are added
  -- once the head is locked.
  SELECT coalesce(array_agg(e.key ORDER BY e.n), '{}'), coalesce(array_agg(r.lineage_id ORDER BY e.n), '{}'),
         coalesce(array_agg('{"agent":' || to_json(v_agent)::text || ',"detail":{},"keys":[' || to_json(e.key)::text
                            || '],"levels":["' || v_level || '"],"lineage":[' || to_json(r.lineage_id)::text
                            || '],"op":"save","outcome":"ok","prev":"' ORDER BY e.n), '{}')
    INTO e_key, e_lineage, e_pre
    FROM unnest(p_event_keys) WITH ORDINALITY AS e(key, n) JOIN unnest(w) AS r ON r.key = e.key;
  v_events := cardinality(e_key);

  -- The chain, from the head (locked: appends from every process queue here). Only this loop is per event.
  SELECT h.seq, h.hash INTO v_first, v_prev FROM audit_head h FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'stratamem: the audit head is missing' USING ERRCODE = 'SM002';
  END IF;
  SELECT coalesce(array_agg('","seq":' || (v_first + n) || ',"session":' || p_session_json || ',"taint":"' || v_label
                            || '","time":' || p_time || '}' ORDER BY n), '{}')
    INTO e_suf FROM generate_series(1, v_events) AS n;
  a_prev := array_fill(NULL::text, ARRAY[v_events]);
  a_hash := a_prev;
  FOR i IN 1 .. v_events LOOP
    a_prev[i] := v_prev;
    v_prev := encode(sha256(convert_to(e_pre[i] || v_prev || e_suf[i], 'UTF8')), 'hex');
    a_hash[i] := v_prev;
  END LOOP;
  INSERT INTO audit (seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail,
                     prev_hash, hash)
  SELECT v_first + e.n, p_now, p_session, v_agent, v_taint, 'save', json_build_array(e.key)::text,
         '["' || v_level || '"]', json_build_array(e.lineage)::text, 'ok', '{}', e.prev, e.hash
    FROM unnest(e_key, e_lineage, a_prev, a_hash) WITH ORDINALITY AS e(key, lineage, prev, hash, n);
  UPDATE audit_head SET seq = v_first + v_events, hash = v_prev;

  RETURN QUERY SELECT * FROM unnest(w);
END
$fn$"""
)

SM_SAVE_TYPES = (
    "text, text, bigint, text, bigint, integer, text[], text[], text[], text[], bigint[], text[], integer[], "
    "text[], text[], text[], bigint[], text[]"
)

# The single save from scalars (installed by migration 14; migrations 10's and 12's are frozen in
# ``frozen_saves``).
SM_SAVE_ONE = (
    r"""
CREATE OR REPLACE FUNCTION sm_save_one(
    p_session text, p_session_json text, p_now bigint, p_time text, p_store_lock bigint, p_key_space integer,
    p_key text, p_content text, p_tags text, p_category text, p_expires bigint, p_lineage text, p_length integer,
    p_terms text, p_tfs text, p_occurred bigint, p_context text)
RETURNS SETOF memories LANGUAGE plpgsql SECURITY INVOKER AS $fn$
DECLARE
  v_agent text; v_taint bigint; v_peers text; v_level text; v_label text;
  o memories; w memories; v_old_terms text; v_inserted boolean := true; v_n bigint := 1; v_len bigint;
  v_seq bigint; v_prev text; v_hash text;
BEGIN
"""
    + BIND_SESSION
    + r"""
  -- Writers of one (agent, key) queue; bulk operator actions exclude every writer (PostgresBackend).
  PERFORM pg_advisory_xact_lock_shared(p_store_lock),
          pg_advisory_xact_lock(p_key_space, hashtext(v_agent || chr(31) || p_key));

  -- The live version this save replaces (an expired one is retired, as if deleted when it expired).
  SELECT * INTO o FROM memories m
   WHERE m.agent_id = v_agent AND m.key = p_key AND m.level = v_taint AND m.deleted_us IS NULL;
  v_len := p_length;
  IF FOUND THEN
    v_n := 0;
    v_len := p_length - o.length;
    v_old_terms := o.terms;
    IF v_old_terms IS NULL THEN
      -- Written before the terms were recorded: recover them from the postings (slow, once per version).
      SELECT coalesce(string_agg(p.term, ' '), '') INTO v_old_terms FROM postings p
       WHERE p.agent_id = v_agent AND p.level = v_taint AND p.memory_id = o.id;
    END IF;
    DELETE FROM postings p
     WHERE p.term = ANY (string_to_array(v_old_terms, ' ')) AND p.agent_id = v_agent AND p.level = v_taint
       AND p.memory_id = o.id;
    IF o.expires_us IS NOT NULL AND o.expires_us <= p_now THEN
      UPDATE memories m SET deleted_us = m.expires_us, shadowable = false, terms = NULL WHERE m.id = o.id;
    ELSE
      -- Updated in place (created time and lineage kept).
      UPDATE memories m SET content = p_content, tags = p_tags, category = p_category, session_id = p_session,
             updated_us = p_now, expires_us = p_expires, length = p_length, terms = p_terms,
             occurred_us = p_occurred, context = p_context
       WHERE m.id = o.id RETURNING * INTO w;
      v_inserted := false;
    END IF;
  END IF;
  IF v_inserted THEN
    INSERT INTO memories (agent_id, key, level, content, tags, category, session_id, created_us, updated_us,
                          lineage_id, expires_us, length, terms, occurred_us, context)
    VALUES (v_agent, p_key, v_taint, p_content, p_tags, p_category, p_session, p_now, p_now, p_lineage, p_expires,
            p_length, p_terms, p_occurred, p_context)
    RETURNING * INTO w;
  END IF;

  -- Postings: one row per term, inserted in index order.
  INSERT INTO postings (term, agent_id, level, memory_id, tf, length)
  SELECT t.term, v_agent, v_taint, w.id, t.tf::integer, p_length
    FROM unnest(string_to_array(p_terms, ' '), string_to_array(p_tfs, ' ')) AS t(term, tf)
   ORDER BY t.term COLLATE "C";

  -- Document frequencies in term order (concurrent writers lock shared rows alike). A version's terms are
  -- distinct, so without a replaced version each is an increment; with one, old and new are netted and the
  -- rows that reach zero removed.
  IF v_old_terms IS NULL THEN
    INSERT INTO term_stats AS ts (term, agent_id, level, df)
    SELECT t, v_agent, v_taint, 1 FROM unnest(string_to_array(p_terms, ' ')) AS t ORDER BY t COLLATE "C"
    ON CONFLICT (term, agent_id, level) DO UPDATE SET df = ts.df + 1;
  ELSE
    INSERT INTO term_stats AS ts (term, agent_id, level, df)
    SELECT d.term, v_agent, v_taint, d.df FROM (
        SELECT x.term, sum(x.d) AS df FROM (
            SELECT unnest(string_to_array(v_old_terms, ' ')) AS term, -1 AS d
            UNION ALL SELECT unnest(string_to_array(p_terms, ' ')), 1) AS x
        GROUP BY x.term) AS d
     WHERE d.df <> 0 ORDER BY d.term COLLATE "C"
    ON CONFLICT (term, agent_id, level) DO UPDATE SET df = ts.df + excluded.df;
    DELETE FROM term_stats ts
     WHERE ts.agent_id = v_agent AND ts.level = v_taint AND ts.df <= 0
       AND ts.term = ANY (string_to_array(v_old_terms, ' '));
  END IF;

  IF v_n <> 0 OR v_len <> 0 THEN
    UPDATE part_stats ps SET n = ps.n + v_n, total_len = ps.total_len + v_len
     WHERE ps.agent_id = v_agent AND ps.level = v_taint;
    IF NOT FOUND THEN
      INSERT INTO part_stats AS ps (agent_id, level, n, total_len) VALUES (v_agent, v_taint, v_n, v_len)
      ON CONFLICT (agent_id, level) DO UPDATE SET n = ps.n + excluded.n, total_len = ps.total_len + excluded.total_len;
    END IF;
  END IF;

  IF v_inserted THEN
    -- A new live version at this level: this key's flags at other levels, and its own, may change.
    PERFORM sm_refresh_shadowable(ARRAY[v_agent], ARRAY[p_key]);
  END IF;
  INSERT INTO memory_vectors (memory_id, agent_id, level, live) VALUES (w.id, v_agent, v_taint, true)
  ON CONFLICT (memory_id) DO UPDATE SET live = true, model = NULL, scale = NULL, vec = NULL;

  -- The event, chained from the head (locked: appends from every process queue here); the bytes hashed
  -- are the canonical JSON of audit.event_hash (sorted keys, no spaces).
  SELECT h.seq + 1, h.hash INTO v_seq, v_prev FROM audit_head h FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'stratamem: the audit head is missing' USING ERRCODE = 'SM002';
  END IF;
  v_hash := encode(sha256(convert_to(
      '{"agent":' || to_json(v_agent)::text || ',"detail":{},"keys":[' || to_json(p_key)::text
      || '],"levels":["' || v_level || '"],"lineage":[' || to_json(w.lineage_id)::text
      || '],"op":"save","outcome":"ok","prev":"' || v_prev || '","seq":' || v_seq || ',"session":'
      || p_session_json || ',"taint":"' || v_label || '","time":' || p_time || '}', 'UTF8')), 'hex');
  INSERT INTO audit (seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail,
                     prev_hash, hash)
  VALUES (v_seq, p_now, p_session, v_agent, v_taint, 'save', json_build_array(p_key)::text, '["' || v_level || '"]',
          json_build_array(w.lineage_id)::text, 'ok', '{}', v_prev, v_hash);
  UPDATE audit_head SET seq = v_seq, hash = v_hash;

  RETURN NEXT w;
END
$fn$"""
)

SM_SAVE_ONE_TYPES = "text, text, bigint, text, bigint, integer, text, text, text, text, bigint, text, integer, text, text, bigint, text"

# Parameters travel in binary (no quoting and escaping of every array element: a batch's arrays encode
# several times faster), each cast to the function's parameter type.
_CALL = "SELECT * FROM sm_save(" + ", ".join(f"%b::{t}" for t in SM_SAVE_TYPES.split(", ")) + ")"
# One record: scalars, which the client encodes far faster than arrays.
_CALL_ONE = "SELECT * FROM sm_save_one(" + ", ".join(f"%b::{t}" for t in SM_SAVE_ONE_TYPES.split(", ")) + ")"
# The calls of the functions before migration 12 (a store held at an older version by the tests).
_OLD_CALL = "SELECT * FROM sm_save(" + ", ".join(f"%b::{t}" for t in SM_SAVE_TYPES.split(", ")[:-2]) + ")"
_OLD_CALL_ONE = (
    "SELECT * FROM sm_save_one(" + ", ".join(f"%b::{t}" for t in SM_SAVE_ONE_TYPES.split(", ")[:-2]) + ")"
)


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
    situated: bool = True,
) -> list[Memory]:
    """One ``sm_save`` statement (on an autocommit connection: its own transaction); stored versions in input order.

    A single draft goes to ``sm_save_one`` instead, when the
    store has it (``one``). ``situated``: the store has migration 12's columns and
    functions (occurred times and contexts); tests hold some stores older, and
    those get the earlier functions' calls, without either.

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
    if situated:
        columns += [
            [to_us(d.occurred_at) if d.occurred_at is not None else now_us for d in latest],
            [d.context for d in latest],
        ]
    head = (
        enc(session_id),
        json.dumps(session_id, ensure_ascii=False),
        now_us,
        # the time exactly as the chain's verifier reads it back (audit.event_hash over the stored microseconds)
        json.dumps(from_us(now_us).isoformat()),
        *locks,
    )
    if one and len(drafts) == 1:  # one key, one event: the same save as sm_save's, from scalars
        call = _CALL_ONE if situated else _OLD_CALL_ONE
        params = (*head, *(column[0] for column in columns))
    else:
        call = _CALL if situated else _OLD_CALL
        params = (*head, *columns[:9], [d.key for d in drafts], *columns[9:])
    try:
        cursor = conn.execute(call, params)
        rows = cursor.fetchall()
    except psycopg.DatabaseError as exc:
        if exc.sqlstate == NO_SESSION:
            raise NotFound(f"no session {session_id!r}") from None
        if exc.sqlstate == NO_AUDIT_HEAD:
            raise StorageError(
                "the audit log's head record is missing (tampering?): run 'stratamem audit verify "
                "--anchor FILE', then restore the row (seq, hash of the newest event)"
            ) from None
        raise
    # the functions return whole ``memories`` rows, in the table's column order: picked by name
    names = [column.name for column in cursor.description or ()]
    picks = [names.index(column) if column in names else None for column in MEMORY_COLUMNS.split(", ")]
    stored = {row[2]: row_to_memory([None if i is None else row[i] for i in picks]) for row in rows}
    return [stored[d.key] for d in drafts]
