// stratamem operator console. Plain JavaScript, no build step, nothing from the network.
//
// Security rules kept throughout this file:
// - every value that comes from the store is put on the page with textContent (the el() helper);
//   innerHTML is never used, so a memory holding <script> or "><img onerror=...> is shown as text;
// - the token lives in this closure only (not in storage, URLs or cookies) and goes out as an
//   Authorization header together with the console id, so another site cannot act for the operator.
"use strict";

(function () {
  const LEVELS = ["PUBLIC", "INTERNAL", "CONFIDENTIAL", "RESTRICTED"];
  const state = { token: null, console: null, clearance: null, max: null, agent: null, features: {},
                  consoleReads: false };
  const $ = (id) => document.getElementById(id);

  // DOM helpers: text only --------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (name === "class") node.className = value;
      else if (name === "data") Object.assign(node.dataset, value);
      else if (name === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
      else if (["title", "type", "value", "hidden", "disabled", "colSpan"].includes(name)) node[name] = value;
      else throw new Error("el(): unsupported property " + name);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const clear = (node) => { while (node.firstChild) node.removeChild(node.firstChild); return node; };
  const badge = (prefix, value) => el("span", { class: "badge " + prefix + "-" + value }, value);
  // a list of levels as badges that wrap between levels, never inside one
  const levelBadges = (levels) => el("div", { class: "levels" }, ...levels.map((lv) => badge("lv", lv)));
  const when = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace("+00:00", "Z") : "");

  // API -----------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }

  async function api(method, path, body, raw) {
    const headers = { Authorization: "Bearer " + state.token };
    if (state.console) headers["X-Stratamem-Console"] = state.console;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body),
                                     credentials: "omit", cache: "no-store", redirect: "error" });
    } catch (err) {
      throw new ApiError(0, "NETWORK", "the server cannot be reached: " + err.message);
    }
    if (raw && response.ok) return response;
    let data = null;
    try { data = await response.json(); } catch (err) { data = null; }
    if (!response.ok) {
      const e = (data && data.error) || { code: "HTTP_" + response.status, message: response.statusText };
      if (response.status === 401 && state.console) signOut("Your sign-in has expired or was refused: " + e.message);
      throw new ApiError(response.status, e.code, e.message);
    }
    return data;
  }

  function qs(params) {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") search.set(k, v);
    const text = search.toString();
    return text ? "?" + text : "";
  }

  function report(err) {
    const banner = $("banner");
    banner.textContent = err instanceof ApiError ? err.code + ": " + err.message : String(err);
    banner.hidden = false;
  }
  const guarded = (fn) => async (...args) => {
    $("banner").hidden = true;
    try { await fn(...args); } catch (err) { report(err); }
  };

  function confirmAction(text) {
    return new Promise((resolve) => {
      $("confirm-text").textContent = text;
      $("confirm").hidden = false;
      const done = (answer) => () => { $("confirm").hidden = true; yes.onclick = no.onclick = null; resolve(answer); };
      const yes = $("confirm-yes"), no = $("confirm-no");
      yes.onclick = done(true);
      no.onclick = done(false);
      yes.focus();
    });
  }

  // sign-in -------------------------------------------------------------------------------------
  async function openConsole(token, clearance) {
    state.token = token;
    state.console = null;
    const opened = await api("POST", "/v1/console/open", { clearance });
    state.console = opened.console;
    state.clearance = opened.clearance;
    state.max = opened.max_clearance;
    state.features = opened.features || {};
    $("principal").textContent = opened.principal;
    const select = clear($("clearance"));
    for (const level of LEVELS.slice(0, LEVELS.indexOf(state.max) + 1)) {
      select.append(el("option", { value: level }, level));
    }
    select.value = state.clearance;
    document.body.dataset.clearance = state.clearance;
    $("signin").hidden = true;
    $("who").hidden = false;
    $("app").hidden = false;
    resetViews();
    await loadAgents(false);
  }

  function signOut(message) {
    const id = state.console;
    if (id && !message) api("POST", "/v1/console/close").catch(() => {});
    Object.assign(state, { token: null, console: null, clearance: null, agent: null });
    $("token").value = "";
    $("signin-error").textContent = message || "";
    $("app").hidden = true;
    $("who").hidden = true;
    $("signin").hidden = false;
  }

  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("signin-error").textContent = "";
    const token = $("token").value.trim();
    try {
      await openConsole(token, $("signin-clearance").value);
    } catch (err) {
      state.token = null;
      $("signin-error").textContent = err instanceof ApiError ? err.code + ": " + err.message : String(err);
    }
  });
  $("signout").addEventListener("click", () => signOut());
  $("clearance").addEventListener("change", guarded(async () => {
    const level = $("clearance").value;
    await api("POST", "/v1/console/close").catch(() => {});
    await openConsole(state.token, level);
  }));

  // tabs ------------------------------------------------------------------------------------------
  const loaders = {};
  function show(view) {
    for (const button of document.querySelectorAll("#tabs button")) {
      button.classList.toggle("active", button.dataset.view === view);
    }
    for (const section of document.querySelectorAll("main .view")) section.hidden = section.id !== "view-" + view;
    if (loaders[view]) guarded(loaders[view])();
  }
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => show(button.dataset.view));
  }

  function resetViews() {
    for (const id of ["agents", "detail"]) clear($(id));
    for (const id of ["memories", "results", "sessions", "audit"]) clear($(id).tBodies[0]);
    $("detail").hidden = true;
    $("agent-name").textContent = "(choose an agent)";
    $("verify-result").textContent = "";
    show("memories");
  }

  // agents and memories ------------------------------------------------------------------------------
  let agentsNext = null;
  const total = (counts) => Object.values(counts).reduce((a, b) => a + b, 0);
  function agentItem(agent) {
    const counts = Object.entries(agent.live).map(([lv, n]) => lv + " " + n);
    for (const [what, byLevel] of [["deleted", agent.deleted], ["expired", agent.expired || {}]]) {
      if (total(byLevel)) counts.push(total(byLevel) + " " + what);
    }
    return el("li", { data: { agent: agent.agent_id }, class: agent.agent_id === state.agent ? "active" : "",
                      on: { click: guarded(() => chooseAgent(agent.agent_id)) } },
      el("span", { class: "mono" }, agent.agent_id), el("span", { class: "counts" }, counts.join(" · ")));
  }
  function showAgents(agents, more, next) {
    const list = $("agents");
    if (!more) clear(list);
    for (const agent of agents) list.append(agentItem(agent));
    if (!list.firstChild) list.append(el("li", {}, "No memories within " + state.clearance + "."));
    agentsNext = next;
    $("agents-more").hidden = !next;
  }
  async function loadAgents(more) {
    const page = await api("GET", "/v1/console/agents" + qs({ after: more ? agentsNext : null }));
    showAgents(page.agents, more, page.next);
    if (!more) {
      // keep the agent being viewed when the console is reopened at another clearance
      const names = page.agents.map((a) => a.agent_id);
      const keep = names.includes(state.agent) ? state.agent : names[0];
      state.agent = null;
      if (keep) await chooseAgent(keep);
    }
  }
  $("agents-more").addEventListener("click", guarded(() => loadAgents(true)));
  // the counts again after an action changed them: as many agents as were listed, the one viewed kept
  async function refreshAgents() {
    const listed = $("agents").querySelectorAll("li[data-agent]").length;
    const agents = [];
    let next = null;
    do {
      const page = await api("GET", "/v1/console/agents" + qs({ after: next }));
      agents.push(...page.agents);
      next = page.next;
    } while (next && agents.length < listed);
    showAgents(agents, false, next);
  }

  async function chooseAgent(agent) {
    state.agent = agent;
    for (const li of $("agents").children) li.classList.toggle("active", li.dataset.agent === agent);
    $("agent-name").textContent = agent;
    for (const id of ["search-agent", "sessions-agent", "graph-agent", "export-agent"]) {
      if (!$(id).value) $(id).value = agent;
    }
    $("detail").hidden = true;
    await loadMemories(false);
  }

  let memoriesNext = null;
  function filters() {
    return { level: $("f-level").value, status: $("f-status").value, tag: $("f-tag").value,
             category: $("f-category").value, text: $("f-text").value };
  }
  async function loadMemories(more) {
    if (!state.agent) return;
    const params = { ...filters(), after: more ? memoriesNext : null };
    const page = await api("GET", "/v1/console/agents/" + encodeURIComponent(state.agent) + "/memories" + qs(params));
    const body = $("memories").tBodies[0];
    if (!more) clear(body);
    for (const r of page.records) body.append(memoryRow(r));
    if (!body.firstChild) body.append(el("tr", {}, el("td", { colSpan: 7 }, "Nothing matches.")));
    memoriesNext = page.next;
    $("memories-more").hidden = !page.next;
  }
  function memoryRow(r) {
    return el("tr", { class: "clickable " + r.state, data: { ref: String(r.ref) },
                      on: { click: guarded(() => openRecord(r.ref)) } },
      el("td", { class: "mono key" }, r.key), el("td", {}, badge("lv", r.level)),
      el("td", { class: "state" }, badge("st", r.state)), el("td", {}, r.category), el("td", {}, r.tags.join(", ")),
      el("td", {}, when(r.updated_at)),
      el("td", { class: "content" }, r.content + (r.truncated ? " … (" + r.content_chars + " characters)" : "")));
  }
  $("filters").addEventListener("submit", (event) => { event.preventDefault(); guarded(() => loadMemories(false))(); });
  $("memories-more").addEventListener("click", guarded(() => loadMemories(true)));

  async function openRecord(ref) {
    const data = await api("GET", "/v1/console/records/" + ref + qs({ console_reads: state.consoleReads ? "show" : "collapse" }));
    const r = data.record;
    const versions = await api("GET", "/v1/console/agents/" + encodeURIComponent(r.agent_id) + "/versions" + qs({ key: r.key }));
    const detail = clear($("detail"));
    detail.hidden = false;
    const fields = el("dl", { class: "fields" });
    const rows = [["key", r.key], ["agent", r.agent_id], ["level", badge("lv", r.level)], ["state", badge("st", r.state)],
                  ["category", r.category], ["tags", r.tags.join(", ")], ["source session", r.session_id || ""],
                  ["created", when(r.created_at)], ["updated", when(r.updated_at)],
                  ["expires", when(r.expires_at)], ["deleted", when(r.deleted_at)], ["lineage", r.lineage_id]];
    for (const [name, value] of rows) fields.append(el("dt", {}, name), el("dd", {}, value));
    const actions = el("div", { class: "row" });
    if (r.state === "deleted") {
      actions.append(el("button", { type: "button", data: { action: "restore" }, on: { click: guarded(() => restore(r)) } }, "Restore"));
    } else if (r.state !== "expired") {
      actions.append(el("button", { type: "button", class: "danger", data: { action: "delete" }, on: { click: guarded(() => softDelete(r)) } }, "Soft delete"));
    }
    const vbody = el("tbody");
    for (const v of versions.versions) {
      vbody.append(el("tr", { class: "clickable " + v.state, on: { click: guarded(() => openRecord(v.ref)) } },
        el("td", {}, badge("lv", v.level)), el("td", { class: "state" }, badge("st", v.state)), el("td", {}, when(v.updated_at)),
        el("td", {}, when(v.deleted_at)), el("td", { class: "content" }, v.content)));
    }
    const lbody = el("tbody");
    const reads = data.lineage.console_reads;
    if (reads.count) {
      const count = reads.count + (reads.capped ? "+" : "") + " console read" + (reads.count === 1 ? "" : "s");
      lbody.append(el("tr", { class: "console-reads" }, el("td", { colSpan: 9 },
        count + (reads.shown ? " (the operator's own looking) listed below " : " (the operator's own looking) collapsed "),
        el("button", { type: "button", data: { action: "console-reads" },
                       on: { click: guarded(() => { state.consoleReads = !reads.shown; return openRecord(r.ref); }) } },
          reads.shown ? "Collapse" : "Show them"))));
    }
    for (const e of data.lineage.events) lbody.append(auditRow(e));
    detail.append(
      el("h3", {}, "Memory ", el("span", { class: "mono" }, r.key)), fields,
      el("h4", {}, "Content (" + r.content_chars + " characters)"), el("pre", { class: "content" }, r.content), actions,
      el("h4", {}, "Versions of this key within " + state.clearance + " (the shown one is what a session at this level gets)"),
      el("table", { class: "versions" }, el("thead", {}, el("tr", {}, ...["level", "state", "updated", "deleted", "content"].map((h) => el("th", {}, h)))), vbody),
      el("h4", {}, "Lineage: sessions that read or wrote it (audit log)"),
      el("table", { class: "lineage events" }, auditHead(), lbody));
    detail.scrollIntoView({ block: "nearest" });
  }

  async function softDelete(r) {
    if (!(await confirmAction("Soft-delete " + JSON.stringify(r.key) + " at " + r.level + " for agent " + r.agent_id + "? It stays restorable until purged."))) return;
    await api("POST", "/v1/console/records/" + r.ref + "/delete", { confirm: true });
    await refreshAgents();
    await loadMemories(false);
    await openRecord(r.ref);
  }
  async function restore(r) {
    if (!(await confirmAction("Restore " + JSON.stringify(r.key) + " at " + r.level + " for agent " + r.agent_id + "?"))) return;
    await api("POST", "/v1/console/records/" + r.ref + "/restore", { confirm: true });
    await refreshAgents();
    await loadMemories(false);
    await openRecord(r.ref);
  }

  // search playground ------------------------------------------------------------------------------------
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(async () => {
      const agent = $("search-agent").value.trim();
      const data = await api("POST", "/v1/console/agents/" + encodeURIComponent(agent) + "/search",
                             { query: $("search-query").value, max_results: Number($("search-n").value) || 10 });
      const body = clear($("results").tBodies[0]);
      data.results.forEach((h, i) => body.append(el("tr", {},
        el("td", {}, String(i + 1)), el("td", { class: "mono score" }, h.score.toFixed(4)),
        el("td", { class: "mono" }, h.matched.join(" ")), el("td", { class: "mono key" }, h.key),
        el("td", {}, badge("lv", h.level)), el("td", { class: "content" }, h.content))));
      if (!data.results.length) body.append(el("tr", {}, el("td", { colSpan: 6 }, "No results.")));
    })();
  });

  // sessions ------------------------------------------------------------------------------------------------
  let sessionsNext = null;
  async function loadSessions(more) {
    // one-shot sessions (one CLI command each) are hidden unless the box asks for them
    const oneShot = $("sessions-one-shot").checked ? "show" : "hide";
    const page = await api("GET", "/v1/console/sessions" + qs({ agent: $("sessions-agent").value.trim(), one_shot: oneShot, after: more ? sessionsNext : null }));
    const body = $("sessions").tBodies[0];
    if (!more) clear(body);
    for (const s of page.sessions) {
      const history = el("div");
      for (const t of s.taint_history) {
        history.append(el("div", {}, when(t.time) + "  " + t.previous + " → " + t.new + "  " + t.reason + (t.source ? "  (" + t.source + ")" : "")));
      }
      body.append(el("tr", s.one_shot ? { class: "one-shot" } : {}, el("td", { class: "mono" }, s.id), el("td", { class: "mono" }, s.agent_id),
        el("td", {}, badge("lv", s.taint)), el("td", {}, badge("lv", s.clearance)), el("td", {}, when(s.created_at)), el("td", {}, history)));
    }
    sessionsNext = page.next;
    $("sessions-more").hidden = !page.next;
  }
  loaders.sessions = () => loadSessions(false);
  $("sessions-form").addEventListener("submit", (event) => { event.preventDefault(); guarded(() => loadSessions(false))(); });
  $("sessions-more").addEventListener("click", guarded(() => loadSessions(true)));
  $("sessions-one-shot").addEventListener("change", guarded(() => loadSessions(false)));

  // audit ------------------------------------------------------------------------------------------------------
  const auditHead = () => el("thead", {}, el("tr", {}, ...["seq", "time", "operation", "outcome", "taint", "agent", "session", "keys", "levels"].map((h) => el("th", {}, h))));
  function auditRow(e) {
    if (e.unreadable) {
      return el("tr", { class: "unreadable" }, el("td", {}, String(e.seq)), el("td", { colSpan: 8, class: "error" }, "this event's stored fields no longer parse (edited?)"));
    }
    return el("tr", { data: { seq: String(e.seq) }, class: e.operation.startsWith("console.") ? "console-read" : "" },
      el("td", {}, String(e.seq)), el("td", { class: "time" }, when(e.time)),
      el("td", { class: "mono op" }, e.operation), el("td", {}, e.outcome), el("td", { class: "levels" }, badge("lv", e.taint)),
      el("td", { class: "mono" }, e.agent_id || ""), el("td", { class: "mono" }, e.session_id || ""),
      el("td", { class: "mono" }, e.keys.join(", ")), el("td", { class: "levels" }, levelBadges(e.levels)));
  }
  let auditNext = null;
  async function loadAudit(more) {
    const page = await api("GET", "/v1/console/audit" + qs({ before: more ? auditNext : null }));
    const body = $("audit").tBodies[0];
    if (!more) clear(body);
    for (const e of page.events) body.append(auditRow(e));
    auditNext = page.next;
    $("audit-more").hidden = !page.next;
  }
  loaders.audit = () => loadAudit(false);
  $("audit-more").addEventListener("click", guarded(() => loadAudit(true)));
  $("verify").addEventListener("click", guarded(async () => {
    const out = $("verify-result");
    out.className = "";
    out.textContent = "verifying…";
    const result = await api("POST", "/v1/console/audit/verify");
    out.className = result.intact ? "ok" : "error";
    out.textContent = result.intact ? "Chain intact." : "Chain BROKEN: first bad sequence " + result.first_bad_seq + ".";
  }));

  // usage and graph (optional parts of a store) ---------------------------------------------------------------
  loaders.usage = async () => {
    const box = clear($("usage"));
    const data = await api("GET", "/v1/console/usage");
    if (!data.available) { box.append(el("p", { class: "note" }, data.reason)); return; }
    if (!data.rows.length) { box.append(el("p", { class: "note" }, "No usage recorded within " + state.clearance + ".")); return; }
    const top = Math.max(...data.rows.map((r) => Number(r.cost_usd))) || 1;
    const body = el("tbody");
    for (const r of data.rows) {
      const bar = el("div", { class: "bar" });
      bar.style.width = Math.max(0.5, (100 * Number(r.cost_usd)) / top) + "%";
      body.append(el("tr", {}, el("td", {}, r.day), el("td", { class: "mono" }, r.model), el("td", {}, String(r.calls)),
        el("td", {}, String(r.input_tokens)), el("td", {}, String(r.output_tokens)), el("td", {}, "$" + r.cost_usd), el("td", {}, bar)));
    }
    box.append(el("table", {}, el("thead", {}, el("tr", {}, ...["day", "model", "calls", "input tokens", "output tokens", "cost", ""].map((h) => el("th", {}, h)))), body));
  };

  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  // Nodes on a circle; each edge a curve from source to target with an arrowhead and its relation as label.
  // Edges between the same two nodes bend apart, so both directions and parallel relations stay readable.
  const NODE_R = 7;
  function edgeShape(a, b, bend) {
    const [mx, my] = [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2];
    const len = Math.hypot(b[0] - a[0], b[1] - a[1]) || 1;
    const c = [mx - ((b[1] - a[1]) / len) * bend, my + ((b[0] - a[0]) / len) * bend];
    const toward = (from, to, by) => {
      const d = Math.hypot(to[0] - from[0], to[1] - from[1]) || 1;
      return [from[0] + ((to[0] - from[0]) / d) * by, from[1] + ((to[1] - from[1]) / d) * by];
    };
    const start = toward(a, c, NODE_R), end = toward(b, c, NODE_R + 2);
    return { d: "M" + start + " Q" + c + " " + end,
             label: [0.25 * start[0] + 0.5 * c[0] + 0.25 * end[0], 0.25 * start[1] + 0.5 * c[1] + 0.25 * end[1]] };
  }
  function loopShape(p, k) {
    const h = 34 + 14 * k;
    return { d: "M" + [p[0] - 4, p[1] - NODE_R] + " C" + [p[0] - 26, p[1] - h] + " " + [p[0] + 26, p[1] - h] + " " + [p[0] + 4, p[1] - NODE_R - 2],
             label: [p[0], p[1] - h * 0.78] };
  }
  async function loadGraph() {
    const box = clear($("graph"));
    clear($("graph-node")).hidden = true;
    const agent = $("graph-agent").value.trim();
    const data = await api("GET", "/v1/console/graph" + qs({ agent }));
    if (!data.available) { box.append(el("p", { class: "note" }, data.reason)); return; }
    if (!data.nodes.length) { box.append(el("p", { class: "note" }, "No nodes within " + state.clearance + ".")); return; }
    const canvas = svg("svg", { class: "graph", viewBox: "0 0 800 440" });
    const marker = svg("marker", { id: "graph-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7,
                                   orient: "auto-start-reverse", markerUnits: "userSpaceOnUse" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }));
    const defs = svg("defs", {});
    defs.append(marker);
    canvas.append(defs);
    const at = {};
    const radius = Math.min(190, 120 + 8 * data.nodes.length);
    data.nodes.forEach((n, i) => {
      const a = (2 * Math.PI * i) / data.nodes.length - Math.PI / 2;
      at[n.name] = [Math.round(400 + radius * 1.6 * Math.cos(a)), Math.round(225 + radius * Math.sin(a))];
    });
    const pairs = {};
    const drawn = data.edges.filter((e) => at[e.source] && at[e.target]);
    for (const e of drawn) {
      const pair = [e.source, e.target].sort().join("\u0000");
      (pairs[pair] = pairs[pair] || []).push(e);
    }
    const labels = [];
    for (const group of Object.values(pairs)) {
      group.forEach((e, k) => {
        let shape;
        if (e.source === e.target) {
          shape = loopShape(at[e.source], k);
        } else {
          // the bend is measured from the pair's first name, so A→B and B→A curve to opposite sides
          const flip = e.source < e.target ? 1 : -1;
          const bend = group.length === 1 ? 0 : flip * (k - (group.length - 1) / 2) * 56;
          shape = edgeShape(at[e.source], at[e.target], bend);
        }
        const path = svg("path", { d: shape.d, class: "edge lv-" + e.level, "marker-end": "url(#graph-arrow)" });
        path.dataset.source = e.source;
        path.dataset.target = e.target;
        path.dataset.relation = e.relation;
        path.append(svg("title", {}, e.source + " —" + e.relation + "→ " + e.target + " (" + e.level + ")"));
        canvas.append(path);
        labels.push(svg("text", { x: shape.label[0], y: shape.label[1] + 3, class: "edge-label", "text-anchor": "middle" }, e.relation));
      });
    }
    canvas.append(...labels);
    for (const n of data.nodes) {
      const [x, y] = at[n.name];
      const group = svg("g", { class: "node", tabindex: 0, role: "button" });
      group.dataset.name = n.name;
      const dot = svg("circle", { cx: x, cy: y, r: NODE_R, class: "lv-" + n.level });
      dot.append(svg("title", {}, n.name + " (" + n.type + ", " + n.level + ")"));
      group.append(dot, svg("text", { x: x + NODE_R + 3, y: y + 4 }, n.name));
      const open = guarded(() => openNode(agent, n.name));
      group.addEventListener("click", open);
      group.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(); } });
      canvas.append(group);
    }
    box.append(canvas);
    if (data.truncated) box.append(el("p", { class: "note" }, "Showing the first page of the graph."));
  }

  // one node as the agent sees it at this clearance: its observations, its edges either way and their other ends
  async function openNode(agent, name) {
    const data = await api("GET", "/v1/console/graph/node" + qs({ agent, name }));
    if (!data.available) return;
    for (const g of document.querySelectorAll("#graph g.node")) g.classList.toggle("active", g.dataset.name === name);
    const n = data.node;
    const panel = clear($("graph-node"));
    panel.hidden = false;
    const fields = el("dl", { class: "fields" });
    for (const [label, value] of [["type", n.type], ["level", badge("lv", n.level)], ["agent", n.agent_id],
                                  ["tags", n.tags.join(", ")], ["updated", when(n.updated_at)], ["content", n.content]]) {
      fields.append(el("dt", {}, label), el("dd", {}, value));
    }
    const obody = el("tbody");
    for (const o of n.observations) {
      obody.append(el("tr", {}, el("td", {}, badge("lv", o.level)), el("td", { class: "time" }, when(o.created_at)), el("td", { class: "text" }, o.text)));
    }
    if (!n.observations.length) obody.append(el("tr", {}, el("td", { colSpan: 3 }, "No observations within " + state.clearance + ".")));
    const ebody = el("tbody");
    const arrows = { out: "→ out", in: "← in", self: "↺ self" };
    for (const e of data.edges) {
      const end = e.neighbour;
      const other = end ? el("button", { type: "button", class: "link mono", on: { click: guarded(() => openNode(agent, end.name)) } }, end.name) : "";
      ebody.append(el("tr", { class: "edge-row", data: { direction: e.direction, relation: e.relation } },
        el("td", {}, arrows[e.direction] || e.direction), el("td", { class: "mono" }, e.relation), el("td", {}, badge("lv", e.level)),
        el("td", { class: "neighbour" }, other), el("td", {}, end ? end.type : ""), el("td", {}, end ? badge("lv", end.level) : ""),
        el("td", {}, e.note || "")));
    }
    if (!data.edges.length) ebody.append(el("tr", {}, el("td", { colSpan: 7 }, "No edges within " + state.clearance + ".")));
    const head = (...names) => el("thead", {}, el("tr", {}, ...names.map((h) => el("th", {}, h))));
    panel.append(
      el("h3", {}, "Node ", el("span", { class: "mono" }, n.name)),
      el("p", { class: "note" }, "As a session of " + n.agent_id + " at " + state.clearance + " sees it."), fields,
      el("h4", {}, "Observations (" + n.observations.length + ")"),
      el("table", { class: "observations" }, head("level", "added", "observation"), obody),
      el("h4", {}, "Edges and neighbours (" + data.edges.length + (data.truncated ? ", the first ones" : "") + ")"),
      el("table", { class: "neighbours" }, head("direction", "relation", "edge level", "neighbour", "type", "node level", "note"), ebody));
    panel.scrollIntoView({ block: "nearest" });
  }
  loaders.graph = async () => {
    if (!state.features.graph) {
      clear($("graph")).append(el("p", { class: "note" }, "the knowledge graph is not available in this store"));
      return;
    }
    if ($("graph-agent").value.trim()) await loadGraph();
  };
  $("graph-form").addEventListener("submit", (event) => { event.preventDefault(); guarded(loadGraph)(); });

  // purge and export -----------------------------------------------------------------------------------------------
  $("purge-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(async () => {
      const local = $("purge-before").value;
      if (!local) return;
      const before = local.length === 16 ? local + ":00+00:00" : local + "+00:00";
      const agent = $("purge-agent").value.trim();
      const scope = agent ? "agent " + agent : "every agent";
      if (!(await confirmAction("Purge for good every soft-deleted or expired record of " + scope + " older than " + before + "? This cannot be undone."))) return;
      const result = await api("POST", "/v1/console/purge", { confirm: true, before, agent: agent || null });
      await refreshAgents();
      $("purge-result").textContent = "Purged " + result.purged + " record(s)." +
        (result.erased ? "" : " Their bytes are not erased from the files yet: " + result.remaining);
    })();
  });

  $("export-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(async () => {
      const agent = $("export-agent").value.trim();
      const response = await api("GET", "/v1/console/agents/" + encodeURIComponent(agent) + "/export", undefined, true);
      const blob = await response.blob();
      const link = el("a", {});
      link.href = URL.createObjectURL(blob);
      link.download = "stratamem-" + agent.replace(/[^A-Za-z0-9_-]/g, "_") + "-" + state.clearance + ".jsonl";
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 10000);
      $("export-result").textContent = "Exported " + blob.size + " bytes.";
    })();
  });

  // declassification: the register (pending requests first to act on) and the act itself -------------------------
  let declassifyNext = null;
  function declassifyRow(d) {
    const decide = (verb) => el("button", { type: "button", on: { click: guarded(async () => {
      if (!(await confirmAction(verb + " declassification " + d.id + " of " + JSON.stringify(d.key) + " (" + d.from + " → " + d.to + ")?"))) return;
      await api("POST", "/v1/console/declassify/" + d.id + "/" + verb.toLowerCase(), { confirm: true });
      await loadDeclassifications(false);
    }) } }, verb);
    return el("tr", { data: { id: String(d.id) } },
      el("td", {}, String(d.id)), el("td", {}, d.status), el("td", { class: "mono" }, d.agent_id),
      el("td", { class: "mono" }, d.key), el("td", { class: "mono" }, d.from + " → " + d.to), el("td", {}, d.reason),
      el("td", { class: "mono" }, d.actor), el("td", { class: "mono" }, d.approver || ""),
      el("td", { class: "time" }, when(d.created_at)), el("td", { class: "time" }, when(d.expires_at)),
      el("td", {}, d.status === "pending" ? decide("Approve") : null, d.status === "pending" ? decide("Deny") : null));
  }
  async function loadDeclassifications(more) {
    const status = $("dc-pending").checked ? "pending" : null;
    const page = await api("GET", "/v1/console/declassify" + qs({ status, before: more ? declassifyNext : null }));
    const body = $("declassifications").tBodies[0];
    if (!more) clear(body);
    for (const d of page.declassifications) body.append(declassifyRow(d));
    declassifyNext = page.next_before;
    $("declassifications-more").hidden = !page.next_before;
  }
  loaders.declassify = () => loadDeclassifications(false);
  $("declassifications-more").addEventListener("click", guarded(() => loadDeclassifications(true)));
  $("dc-pending").addEventListener("change", guarded(() => loadDeclassifications(false)));
  $("declassify-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(async () => {
      const order = { agent: $("dc-agent").value.trim(), key: $("dc-key").value, from: $("dc-from").value.trim(),
                      to: $("dc-to").value.trim(), reason: $("dc-reason").value, confirm: true };
      const redacted = $("dc-replacement").value;
      if (redacted) order.replacement = redacted;
      const what = redacted ? "a redacted text of " : "the content of ";
      if (!(await confirmAction("Write " + what + JSON.stringify(order.key) + " of agent " + order.agent + " at " + order.to + " (now " + order.from + ")?"))) return;
      const done = await api("POST", "/v1/console/declassify", order);
      $("declassify-result").textContent = done.status === "pending"
        ? "Request " + done.id + " waits for another operator's approval (until " + when(done.expires_at) + ")."
        : "Declassified: request " + done.id + ", content hash " + done.content_sha256 + ".";
      await loadDeclassifications(false);
    })();
  });
})();
