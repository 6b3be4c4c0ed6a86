"""Migration 10: ``sm_save_one``, the single save as a function of one record's scalars.

Version 9's ``sm_save`` is written for batches: a single save called it with
ten one-element arrays, and each of its statements was a plan for many rows
(aggregates with their sorts, joins of ``unnest`` over composite arrays,
netting of old and new terms) run over one. Profiled with ``perf`` on the
server backend, about a quarter of a single save's server time was executor
start-up, building those plan trees; replacing a live version was the worst
case (about 3 ms of server time against 1.5 for a new key, under load). The
client spent about a tenth of a millisecond encoding the one-element arrays.

``sm_save_one`` does exactly what ``sm_save`` does for one key and one event —
same locks in the same order (session, store and key advisory locks, the
version, term rows in ``COLLATE "C"`` order, the partition, the audit head, so
single saves and batches cannot deadlock each other in a new way), same rows,
same row-level security (``SECURITY INVOKER``; only the shadowing refresh runs
as the owner, through the same ``sm_refresh_shadowable``), same audit bytes —
from scalars, each statement a single-row one:

- ``INSERT ... VALUES`` / ``UPDATE ... WHERE id`` for the version, the postings
  and new terms straight from ``unnest`` of the term strings;
- work that is empty for a new key is skipped rather than run over empty sets:
  the replaced version's postings and statistics, and the netting of old and new
  terms (a version's terms are distinct, so a new key's document frequencies are
  plain increments); an update in place skips the shadowing refresh (the key's
  set of live levels is unchanged, so no flag can change);
- the partition's size is changed with a plain ``UPDATE`` (``ON CONFLICT DO
  UPDATE`` locks the row first: a second WAL record) and inserted only when the
  partition is new; the audit event is hashed and inserted from scalars.

Measured and left out: forcing generic plans (no gain once the statements are
this small) and updating existing ``term_stats`` rows with a plain ``UPDATE``
before inserting the rest — a cached plan made while the table was small scans
it sequentially (8 ms a save), where ``ON CONFLICT`` always probes its index.
``sm_save`` stays the batch path (and the path of a batch that names a key twice).
"""

from __future__ import annotations

from .save_set import BIND_SESSION

_FUNCTION = (
    r"""
CREATE OR REPLACE FUNCTION sm_save_one(
    p_session text, p_session_json text, p_now bigint, p_time text, p_store_lock bigint, p_key_space integer,
    p_key text, p_content text, p_tags text, p_category text, p_expires bigint, p_lineage text, p_length integer,
    p_terms text, p_tfs text)
RETURNS SETOF memories LANGUAGE plpgsql SECURITY INVOKER AS $fn$
DECLARE
  v_agent text; v_taint smallint; v_peers text; v_level text;
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
             updated_us = p_now, expires_us = p_expires, length = p_length, terms = p_terms
       WHERE m.id = o.id RETURNING * INTO w;
      v_inserted := false;
    END IF;
  END IF;
  IF v_inserted THEN
    INSERT INTO memories (agent_id, key, level, content, tags, category, session_id, created_us, updated_us,
                          lineage_id, expires_us, length, terms)
    VALUES (v_agent, p_key, v_taint, p_content, p_tags, p_category, p_session, p_now, p_now, p_lineage, p_expires,
            p_length, p_terms)
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
      || p_session_json || ',"taint":"' || v_level || '","time":' || p_time || '}', 'UTF8')), 'hex');
  INSERT INTO audit (seq, at_us, session_id, agent_id, taint, operation, keys, levels, lineage, outcome, detail,
                     prev_hash, hash)
  VALUES (v_seq, p_now, p_session, v_agent, v_taint, 'save', json_build_array(p_key)::text, '["' || v_level || '"]',
          json_build_array(w.lineage_id)::text, 'ok', '{}', v_prev, v_hash);
  UPDATE audit_head SET seq = v_seq, hash = v_hash;

  RETURN NEXT w;
END
$fn$"""
)

TYPES = "text, text, bigint, text, bigint, integer, text, text, text, text, bigint, text, integer, text, text"

MIGRATION = [_FUNCTION, "GRANT EXECUTE ON FUNCTION sm_save_one(" + TYPES + ") TO {app}"]
