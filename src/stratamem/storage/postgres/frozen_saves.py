"""The save functions as shipped by PostgreSQL schema versions 8 and 9 (``sm_save``), 10 (``sm_save_one``) and
12 (both), frozen.

A shipped version's SQL never changes (``migrations.py``); the live functions, which store every record at its
session's label, are ``save.py``'s and version 14 installs them. Version 12's functions (the occurred time and
context of every record; taints were levels alone) differ from the live ones only where labels touch them, so
their text is the live text with those few lines put back as shipped (``_as_shipped_in_12``; the snapshot test
compares the result byte for byte): when the live text changes elsewhere, write version 12's out here in full.
Kept apart from ``migrations.py`` only for size: this is part of the migration list's text.
"""

from __future__ import annotations

from . import save

V8_SM_SAVE = r"""
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
  -- The session, read inside the transaction (a concurrent escalation waits or is seen), binds it.
  SELECT s.agent_id, s.taint, s.peers INTO v_agent, v_taint, v_peers FROM sessions s WHERE s.id = p_session FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'stratamem: no session' USING ERRCODE = 'SM001';
  END IF;
  PERFORM set_config('stratamem.taint', v_taint::text, true),
          set_config('stratamem.agents',
                     (ARRAY[v_agent] || ARRAY(SELECT jsonb_array_elements_text(v_peers::jsonb)))::text, true),
          set_config('stratamem.agent', v_agent, true),
          set_config('stratamem.operator', '', true);
  v_level := (ARRAY['PUBLIC', 'INTERNAL', 'CONFIDENTIAL', 'RESTRICTED'])[v_taint + 1];

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
V8_SM_SAVE_TYPES = (
    "text, text, bigint, text, bigint, integer, text[], text[], text[], text[], bigint[], text[], integer[], "
    "text[], text[], text[]"
)

V9_SM_SAVE = r"""
CREATE OR REPLACE FUNCTION sm_save(
    p_session text, p_session_json text, p_now bigint, p_time text, p_store_lock bigint, p_key_space integer,
    p_keys text[], p_contents text[], p_tags text[], p_categories text[], p_expires bigint[],
    p_lineages text[], p_lengths integer[], p_terms text[], p_tfs text[], p_event_keys text[])
RETURNS SETOF memories LANGUAGE plpgsql SECURITY INVOKER AS $fn$
DECLARE
  v_agent text; v_taint smallint; v_peers text; v_level text;
  o_id bigint[]; o_key text[]; o_len integer[]; o_terms text[]; o_expired boolean[];
  w memories[]; v_n bigint; v_len bigint;
  v_first bigint; v_prev text; v_events integer;
  e_key text[]; e_lineage text[]; e_pre text[]; e_suf text[]; a_prev text[]; a_hash text[];
BEGIN
  -- The session, read inside the transaction (a concurrent escalation waits or is seen), binds it.
  SELECT s.agent_id, s.taint, s.peers INTO v_agent, v_taint, v_peers FROM sessions s WHERE s.id = p_session FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'stratamem: no session' USING ERRCODE = 'SM001';
  END IF;
  PERFORM set_config('stratamem.taint', v_taint::text, true),
          set_config('stratamem.agents',
                     (ARRAY[v_agent] || ARRAY(SELECT jsonb_array_elements_text(v_peers::jsonb)))::text, true),
          set_config('stratamem.agent', v_agent, true),
          set_config('stratamem.operator', '', true);
  v_level := (ARRAY['PUBLIC', 'INTERNAL', 'CONFIDENTIAL', 'RESTRICTED'])[v_taint + 1];

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
  SELECT coalesce(array_agg('","seq":' || (v_first + n) || ',"session":' || p_session_json || ',"taint":"' || v_level
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

V9_SM_SAVE_TYPES = "text, text, bigint, text, bigint, integer, text[], text[], text[], text[], bigint[], text[], integer[], text[], text[], text[]"

V10_SM_SAVE_ONE = r"""
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
  -- The session, read inside the transaction (a concurrent escalation waits or is seen), binds it.
  SELECT s.agent_id, s.taint, s.peers INTO v_agent, v_taint, v_peers FROM sessions s WHERE s.id = p_session FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'stratamem: no session' USING ERRCODE = 'SM001';
  END IF;
  PERFORM set_config('stratamem.taint', v_taint::text, true),
          set_config('stratamem.agents',
                     (ARRAY[v_agent] || ARRAY(SELECT jsonb_array_elements_text(v_peers::jsonb)))::text, true),
          set_config('stratamem.agent', v_agent, true),
          set_config('stratamem.operator', '', true);
  v_level := (ARRAY['PUBLIC', 'INTERNAL', 'CONFIDENTIAL', 'RESTRICTED'])[v_taint + 1];

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

V10_SM_SAVE_ONE_TYPES = (
    "text, text, bigint, text, bigint, integer, text, text, text, text, bigint, text, integer, text, text"
)

# What version 14 changed in the save functions, as (shipped in 12, live): the taint a label's integer, the
# records' level its level part, and the label as the audit chain names it in each event's taint.
_LABEL_LINES = (
    (
        "v_taint smallint; v_peers text; v_level text;",
        "v_taint bigint; v_peers text; v_level text; v_label text;",
    ),
    (
        "  v_level := (ARRAY['PUBLIC', 'INTERNAL', 'CONFIDENTIAL', 'RESTRICTED'])[v_taint + 1];\n",
        save.BIND_SESSION[save.BIND_SESSION.index("  -- The taint is a label") :],
    ),
    ("""',"taint":"' || v_level""", """',"taint":"' || v_label"""),
)


def _as_shipped_in_12(live: str) -> str:
    for shipped, now in _LABEL_LINES:
        assert live.count(now) == 1, now
        live = live.replace(now, shipped)
    return live


V12_SM_SAVE = _as_shipped_in_12(save.SM_SAVE)
V12_SM_SAVE_ONE = _as_shipped_in_12(save.SM_SAVE_ONE)
