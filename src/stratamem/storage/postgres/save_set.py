"""Migration 9: ``sm_save`` with no per-row work left in the server, and an index-driven shadowing refresh.

Profiled on a batch of 1,000 (``auto_explain`` with nested statements), migration 8's
function was already one statement per table, but two parts still cost per row:

- ``sm_refresh_shadowable`` (SECURITY DEFINER, shared with deletes, imports and
  rebuilds) joined the batch's keys to *every* live version of the table (a
  hash join over a full scan), so its cost grew with the store, not the batch.
  Here each distinct (agent, key) is looked up through ``memories_live`` (a
  ``LATERAL ... OFFSET 0`` the planner cannot turn back into a join over the
  table), and one probe gives both the key's versions and its highest level.
- The audit chain was built in a loop that re-encoded every field of every
  event (``to_json`` of agent, key and lineage, the constant parts, the
  sequence number) and appended to arrays. The parts of each event's canonical
  JSON that do not depend on the previous hash are now built set-based, in one
  statement, as a prefix and a suffix around ``"prev"`` (the keys are sorted, so
  ``"prev"`` sits between ``"outcome"`` and ``"seq"``); the loop that remains is
  the chain itself, one SHA-256 of ``prefix || prev || suffix`` per event, as a
  hash chain must be. The bytes hashed are exactly those of ``audit.event_hash``.

Document frequencies are netted per distinct term over the whole batch and
upserted once per term in ``COLLATE "C"`` order (so two concurrent batches lock
the rows they share in the same order and cannot deadlock on them), the
postings are one sorted ``INSERT ... SELECT``, the audit rows one ``INSERT``.
``term_stats`` gets a fill factor of 70: nearly every batch increments terms
that exist, and room on the page lets those updates be HOT (no new index entry).

Same parameters and result as version 8, so the client and every caller stay
as they are; still ``SECURITY INVOKER`` under the same row-level security. Most
of the body repeats version 8's on purpose: a shipped migration's text is never
changed, so the two are kept as written rather than assembled from shared parts.
"""

from __future__ import annotations

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
  v_level := (ARRAY['PUBLIC', 'INTERNAL', 'CONFIDENTIAL', 'RESTRICTED'])[v_taint + 1];
"""

_REFRESH = r"""
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
)

MIGRATION = [
    _REFRESH,
    _FUNCTION,
    "ALTER TABLE term_stats SET (fillfactor = 70)",
]
