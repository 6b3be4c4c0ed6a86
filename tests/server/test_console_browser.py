"""The console in a real browser: headless Chromium driven by Playwright against a real ``stratamem serve``.

Skipped (with the reason) only when this machine has no Chromium; ``.ci/run``
installs Debian's ``chromium`` so CI always runs these. The browser never
downloads anything (no ``playwright install``): it is the system's binary,
started with networking features off.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (the test extra)"
)
CHROMIUM = (
    os.environ.get("STRATAMEM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
)
if not CHROMIUM:
    pytest.skip(
        "no chromium on this machine (apt-get install -y chromium; .ci/run installs it)",
        allow_module_level=True,
    )

import httpx2  # noqa: E402
from server_support import cli_env, free_port, start_serve  # noqa: E402

import stratamem as sm  # noqa: E402
from stratamem.storage.records import ONE_SHOT_PREFIX  # noqa: E402

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
# The README's screenshot: STRATAMEM_CONSOLE_SCREENSHOT=docs/console.png pytest tests/server/test_console_browser.py
SCREENSHOT_ENV = "STRATAMEM_CONSOLE_SCREENSHOT"
XSS_SCRIPT = '<script>window.__pwned = 1; alert("script")</script>'
XSS_IMG = '"><img src=x onerror="window.__pwned = 2; alert(1)">'


def seed(db: Path) -> None:
    """A small demo store: two agents, every level, shadowing, a deleted memory, hostile content."""
    with sm.open_store(str(db)) as store:
        main = store.session("main")
        main.save("coffee", "Sam takes coffee black, no sugar", tags=["preference"])
        main.save("editor", "Uses vim with a dark theme", tags=["preference", "tools"])
        main.save("project", "Billing migration planned for Q3", category="daily")
        main.save("xss-script", XSS_SCRIPT, tags=["<b>hostile</b>"])
        main.save("xss-img", XSS_IMG)
        main.save("rtl", "\u202etxet desrever\u200b with zero\u200dwidth", tags=["unicode"])
        main.save("old-note", "Parking spot is B12")
        main.delete("old-note")
        main.escalate("INTERNAL", "read the team wiki", source="tool:wiki")
        main.save("team", "Team standup moved to 9:30")
        main.escalate("CONFIDENTIAL", "opened payroll.xlsx", source="tool:read_file")
        main.save("project", "Billing migration blocked on the payroll audit")
        main.save("salary-band", "Senior band tops at 185k")
        research = store.session("researcher")
        research.save("paper", "MaxScore pruning keeps exact top-k BM25")
        research.save("blob", "w" * 65536)  # one 64 KiB line
        scratch = store.session("scratch")  # soft-deleted and restored by one test, read by no other
        scratch.save("note-1", "first scratch note")
        scratch.save("note-2", "second scratch note")
        graph = store.session("main").graph
        graph.capture("Sam", "person", "engineer", observations=["likes tea"])
        graph.capture("Billing", "project", "the billing migration")
        graph.relate("Sam", "Billing", "works_on")
        secret = store.session("main")
        secret.escalate("CONFIDENTIAL", "opened payroll.xlsx")
        secret.graph.capture("Payroll", "project")
        secret.graph.add_observations([("Sam", ["asked for a raise"])])
        secret.graph.relate("Payroll", "Sam", "pays")


@pytest.fixture(scope="module")
def console_server(tmp_path_factory) -> Iterator[tuple[str, str, Path]]:
    tmp = tmp_path_factory.mktemp("console")
    db = tmp / "memory.db"
    seed(db)
    port = free_port()
    proc = start_serve(tmp, db, port, env=cli_env(tmp))
    try:
        token = (tmp / "home" / "server-token").read_text().strip()
        yield f"http://127.0.0.1:{port}", token, db
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, console_server):
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.dialogs = []  # any alert/confirm/prompt is a failure: the console never uses them
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.set_default_timeout(20_000)
    yield page
    context.close()


def sign_in(page, console_server, clearance: str = "RESTRICTED", token: str | None = None) -> None:
    url, dev_token, _ = console_server
    page.goto(url + "/")
    page.fill("#token", token or dev_token)
    page.select_option("#signin-clearance", clearance)
    page.click("#signin-form button[type=submit]")


def keys_shown(page) -> list[str]:
    page.wait_for_selector("#memories tbody tr")
    return page.locator("#memories tbody td.key").all_text_contents()


def test_sign_in_refuses_a_bad_token_and_says_so(page, console_server):
    sign_in(page, console_server, token="not-a-token-at-all")
    page.wait_for_selector("#signin-error:not(:empty)")
    assert "UNAUTHENTICATED" in page.text_content("#signin-error")
    assert page.is_hidden("#app")


def test_browse_and_clearance(page, console_server):
    sign_in(page, console_server, "INTERNAL")
    page.wait_for_selector("#agents li")
    assert page.locator("#agents li .mono").all_text_contents() == ["main", "researcher", "scratch"]
    shown = keys_shown(page)
    assert "salary-band" not in shown and "team" in shown
    assert "Billing migration planned for Q3" in page.text_content("#memories tbody")
    # the same console reopened at CONFIDENTIAL shows the CONFIDENTIAL memory and the shadowing
    page.select_option("#clearance", "CONFIDENTIAL")
    page.wait_for_selector("body[data-clearance=CONFIDENTIAL]", state="attached")
    page.wait_for_selector("#memories td.key:text-is('salary-band')")
    rows = page.locator("#memories tbody tr[data-ref]")
    states = {
        (
            rows.nth(i).locator("td.key").text_content(),
            rows.nth(i).locator("td").nth(1).text_content(),
            rows.nth(i).locator("td.state").text_content(),
        )
        for i in range(rows.count())
    }
    assert ("project", "CONFIDENTIAL", "shown") in states and ("project", "PUBLIC", "shadowed") in states
    assert ("old-note", "PUBLIC", "deleted") in states
    # filters
    page.fill("#f-tag", "preference")
    page.click("#filters button[type=submit]")
    playwright_api.expect(page.locator("#memories tbody tr[data-ref]")).to_have_count(2)
    assert sorted(keys_shown(page)) == ["coffee", "editor"]


def test_hostile_memories_render_as_text(page, console_server):
    sign_in(page, console_server)
    page.wait_for_selector("#memories td.key:text-is('xss-img')")
    for key, content in (("xss-script", XSS_SCRIPT), ("xss-img", XSS_IMG)):
        page.click(f"#memories td.key:text-is('{key}')")
        page.wait_for_selector(f"#detail h3 .mono:text-is('{key}')")
        assert page.text_content("#detail pre.content") == content
    assert page.text_content("#memories tbody").count("<b>hostile</b>") == 1
    assert page.locator("img").count() == 0
    assert page.locator("#memories script, #detail script").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.dialogs == []


def test_search_playground_shows_scores_and_matched_terms(page, console_server):
    sign_in(page, console_server, "CONFIDENTIAL")
    page.wait_for_selector("#agents li")
    page.click("#tabs button[data-view=search]")
    page.fill("#search-agent", "main")
    page.fill("#search-query", "what blocks the billing migration?")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("#results tbody td.key")
    first = page.locator("#results tbody tr").first
    assert first.locator("td.key").text_content() == "project"
    assert float(first.locator("td.score").text_content()) > 0
    assert set(first.locator("td").nth(2).text_content().split()) >= {"bill", "migrat"}


def test_sessions_show_the_taint_history(page, console_server):
    sign_in(page, console_server, "CONFIDENTIAL")
    page.wait_for_selector("#agents li")
    page.click("#tabs button[data-view=sessions]")
    page.wait_for_selector("#sessions tbody tr")
    text = page.text_content("#sessions tbody")
    assert "opened payroll.xlsx" in text and "tool:read_file" in text and "PUBLIC → INTERNAL" in text


def session_ids(page) -> list[str]:
    return page.locator("#sessions tbody tr td:first-child").all_text_contents()


def test_one_shot_sessions_show_only_when_the_box_is_ticked(page, console_server):
    _, _, db = console_server
    one_shot = f"{ONE_SHOT_PREFIX}browser"
    with sm.open_store(str(db)) as store:
        store.session("oneshot-agent", session_id=one_shot)
        store.session("oneshot-agent", session_id="named-browser")
    sign_in(page, console_server)
    page.wait_for_selector("#agents li")
    page.click("#tabs button[data-view=sessions]")
    page.fill("#sessions-agent", "oneshot-agent")
    page.click("#sessions-form button[type=submit]")
    rows = page.locator("#sessions tbody tr td:first-child")
    playwright_api.expect(rows).to_have_text(["named-browser"])
    page.check("#sessions-one-shot")
    playwright_api.expect(rows).to_have_count(2)
    assert sorted(session_ids(page)) == sorted(["named-browser", one_shot])
    assert page.locator("#sessions tbody tr.one-shot td:first-child").all_text_contents() == [one_shot]
    page.uncheck("#sessions-one-shot")
    playwright_api.expect(rows).to_have_text(["named-browser"])
    assert not page.dialogs


def test_verify_chain_intact_then_broken(page, console_server):
    _, _, db = console_server
    sign_in(page, console_server)
    page.wait_for_selector("#agents li")
    page.click("#tabs button[data-view=audit]")
    page.wait_for_selector("#audit tbody tr")
    page.click("#verify")
    page.wait_for_selector("#verify-result.ok")
    assert page.text_content("#verify-result") == "Chain intact."
    with sqlite3.connect(db) as conn:
        original = conn.execute("SELECT outcome FROM audit WHERE seq = 3").fetchone()[0]
        conn.execute("UPDATE audit SET outcome = 'edited' WHERE seq = 3")
    try:
        page.click("#verify")
        page.wait_for_selector("#verify-result.error")
        assert page.text_content("#verify-result") == "Chain BROKEN: first bad sequence 3."
    finally:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE audit SET outcome = ? WHERE seq = 3", (original,))


def test_restore_a_deleted_memory(page, console_server):
    sign_in(page, console_server)
    page.wait_for_selector("#memories td.key:text-is('old-note')")
    page.click("#memories td.key:text-is('old-note')")
    page.click("#detail button[data-action=restore]")
    page.wait_for_selector("#confirm:not([hidden])")
    assert "old-note" in page.text_content("#confirm-text")
    page.click("#confirm-yes")
    page.wait_for_selector("#detail button[data-action=delete]")
    row = page.locator("#memories tbody tr", has=page.locator("td.key:text-is('old-note')"))
    assert row.locator("td.state").text_content() == "shown"
    assert page.dialogs == []


def test_optional_views_and_screenshot(page, console_server, tmp_path):
    sign_in(page, console_server, "CONFIDENTIAL")
    page.wait_for_selector("#memories td.key:text-is('salary-band')")
    page.click("#tabs button[data-view=usage]")
    page.wait_for_selector("#usage p, #usage table")
    page.click("#tabs button[data-view=graph]")
    page.click("#tabs button[data-view=memories]")
    page.click("#memories td.key:text-is('project')")
    page.wait_for_selector("#detail table.versions tbody tr")
    shot = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "console.png")
    page.locator("header").scroll_into_view_if_needed()
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_docs_render_offline(page, console_server):
    url, _, _ = console_server
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url + "/docs")
    page.wait_for_selector(".swagger-ui .opblock")
    assert all(r.startswith(url) or r.startswith("data:") for r in requests), requests


def test_a_64k_line_stays_bounded_in_the_page(page, console_server):
    sign_in(page, console_server)
    page.click("#agents li[data-agent=researcher]")
    page.wait_for_selector("#memories td.key:text-is('blob')")
    row = page.locator("#memories tbody tr", has=page.locator("td.key:text-is('blob')"))
    assert row.locator("td.content").text_content().endswith("… (65536 characters)")
    assert row.bounding_box()["width"] <= 1360
    row.click()
    page.wait_for_selector("#detail pre.content")
    assert len(page.text_content("#detail pre.content")) == 65536


def test_an_ended_sign_in_returns_to_the_sign_in_page_and_says_why(page, console_server):
    url, token, _ = console_server
    with page.expect_response("**/v1/console/open") as opened:
        sign_in(page, console_server)
    console_id = opened.value.json()["console"]
    page.wait_for_selector("#agents li")
    headers = {"Authorization": f"Bearer {token}", "X-Stratamem-Console": console_id}
    assert httpx2.post(url + "/v1/console/close", headers=headers).status_code == 200  # as if it had expired
    page.click("#agents li[data-agent=researcher]")
    page.wait_for_selector("#signin-error:not(:empty)")
    assert "expired" in page.text_content("#signin-error") and page.is_hidden("#app")
    assert page.input_value("#token") == ""


def agent_counts(page, agent: str) -> str:
    return page.text_content(f"#agents li[data-agent={agent}] .counts")


def test_agent_counts_follow_a_soft_delete_and_a_restore(page, console_server):
    sign_in(page, console_server)
    page.click("#agents li[data-agent=scratch]")
    page.wait_for_selector("#memories td.key:text-is('note-1')")
    assert agent_counts(page, "scratch") == "PUBLIC 2"
    page.click("#memories td.key:text-is('note-1')")
    page.click("#detail button[data-action=delete]")
    page.click("#confirm-yes")
    page.wait_for_selector("#detail button[data-action=restore]")
    playwright_api.expect(page.locator("#agents li[data-agent=scratch] .counts")).to_have_text(
        "PUBLIC 1 · 1 deleted"
    )
    assert page.locator("#agents li.active").get_attribute("data-agent") == "scratch"
    page.click("#detail button[data-action=restore]")
    page.click("#confirm-yes")
    page.wait_for_selector("#detail button[data-action=delete]")
    playwright_api.expect(page.locator("#agents li[data-agent=scratch] .counts")).to_have_text("PUBLIC 2")
    assert agent_counts(page, "main").startswith("PUBLIC ")  # the other agents are listed still


def show_graph(page, console_server, clearance: str) -> None:
    sign_in(page, console_server, clearance)
    page.wait_for_selector("#agents li.active[data-agent=main]")
    page.click("#tabs button[data-view=graph]")
    page.fill("#graph-agent", "main")
    page.click("#graph-form button[type=submit]")
    page.wait_for_selector("#graph svg g.node")


def test_graph_edges_are_labelled_directed_and_a_node_opens_its_panel(page, console_server):
    show_graph(page, console_server, "INTERNAL")
    names = page.locator("#graph g.node").evaluate_all("gs => gs.map(g => g.dataset.name)")
    assert sorted(names) == ["Billing", "Sam"]  # Payroll is CONFIDENTIAL
    edge = page.locator("#graph path.edge")
    assert edge.count() == 1
    assert edge.get_attribute("marker-end") == "url(#graph-arrow)"
    assert page.locator("#graph marker#graph-arrow path").count() == 1
    assert page.locator("#graph text.edge-label").all_text_contents() == ["works_on"]
    # the arrow ends at the target: the path's last point is by Billing, its first by Sam
    ends = edge.evaluate(
        """p => {
            const centre = (name) => {
                const c = document.querySelector(`#graph g.node[data-name="${name}"] circle`);
                return [Number(c.getAttribute("cx")), Number(c.getAttribute("cy"))];
            };
            const dist = (pt, c) => Math.hypot(pt.x - c[0], pt.y - c[1]);
            const first = p.getPointAtLength(0), last = p.getPointAtLength(p.getTotalLength());
            return [dist(first, centre("Sam")), dist(last, centre("Billing"))];
        }"""
    )
    assert all(d < 12 for d in ends), ends
    page.click("#graph g.node[data-name=Sam]")
    page.wait_for_selector("#graph-node table.neighbours")
    assert page.locator("#graph g.node.active").get_attribute("data-name") == "Sam"
    panel = page.locator("#graph-node")
    assert panel.locator("h3 .mono").text_content() == "Sam"
    observed = panel.locator("table.observations tbody td")
    assert observed.count() == 3  # one observation: level, time, text
    assert [observed.nth(0).text_content(), observed.nth(2).text_content()] == ["PUBLIC", "likes tea"]
    rows = panel.locator("table.neighbours tbody tr.edge-row")
    assert rows.count() == 1
    assert [rows.nth(0).locator("td").nth(i).text_content() for i in (0, 1, 2, 3, 5)] == [
        "→ out",
        "works_on",
        "PUBLIC",
        "Billing",
        "PUBLIC",
    ]
    assert "Payroll" not in panel.text_content() and "raise" not in panel.text_content()
    # a neighbour opens in its turn
    rows.nth(0).locator("button").click()
    page.wait_for_selector("#graph-node h3 .mono:text-is('Billing')")
    assert page.locator("#graph-node tr.edge-row td").first.text_content() == "← in"
    assert page.dialogs == []


def test_a_node_panel_shows_more_at_a_higher_clearance(page, console_server):
    show_graph(page, console_server, "CONFIDENTIAL")
    labels = sorted(page.locator("#graph text.edge-label").all_text_contents())
    assert labels == ["pays", "works_on"]
    page.click("#graph g.node[data-name=Sam]")
    page.wait_for_selector("#graph-node table.neighbours")
    observations = page.locator("#graph-node table.observations tbody tr")
    assert observations.count() == 2 and "asked for a raise" in observations.nth(1).text_content()
    assert observations.nth(1).locator(".badge").text_content() == "CONFIDENTIAL"
    pays = page.locator("#graph-node tr.edge-row[data-relation=pays] td")
    assert [pays.nth(i).text_content() for i in (0, 2, 3, 5)] == [
        "← in",
        "CONFIDENTIAL",
        "Payroll",
        "CONFIDENTIAL",
    ]


def lineage_operations(page) -> list[str]:
    return page.locator("#detail table.lineage tbody tr[data-seq] td:nth-child(3)").all_text_contents()


def test_a_records_lineage_collapses_the_consoles_own_reads(page, console_server):
    sign_in(page, console_server)
    page.wait_for_selector("#memories td.key:text-is('coffee')")
    for _ in range(3):  # every memories page is audited as a console read naming each record shown
        with page.expect_response("**/memories*"):
            page.click("#filters button[type=submit]")
    page.click("#memories td.key:text-is('coffee')")
    page.wait_for_selector("#detail table.lineage tr.console-reads")
    assert lineage_operations(page) and not any(op.startswith("console.") for op in lineage_operations(page))
    assert "save" in lineage_operations(page)
    collapsed = page.text_content("#detail tr.console-reads")
    count = int(collapsed.split()[0])
    assert count >= 4 and "console reads" in collapsed
    page.click("#detail button[data-action=console-reads]")
    page.wait_for_selector("#detail table.lineage tr.console-read")
    listed = lineage_operations(page)
    assert {"console.memories", "console.record"} <= set(listed) and "save" in listed
    assert page.text_content("#detail button[data-action=console-reads]") == "Collapse"
    page.click("#detail button[data-action=console-reads]")
    page.wait_for_selector("#detail button[data-action=console-reads]:text-is('Show them')")
    assert not any(op.startswith("console.") for op in lineage_operations(page))


# Each level name in a cell: one line box, and inside the cell (the text itself measured, whatever the markup).
LEVEL_WORDS = """cells => cells.flatMap(cell => {
    const box = cell.getBoundingClientRect();
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    const out = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of node.data.matchAll(/PUBLIC|INTERNAL|CONFIDENTIAL|RESTRICTED/g)) {
            const range = document.createRange();
            range.setStart(node, m.index);
            range.setEnd(node, m.index + m[0].length);
            const rects = [...range.getClientRects()];
            out.push({word: m[0], lines: rects.length,
                      inside: rects.every(r => r.left >= box.left - 0.5 && r.right <= box.right + 0.5)});
        }
    }
    return out;
})"""


def broken_levels(page, table: str) -> list[dict]:
    words = page.locator(f"{table} tbody td:nth-child(9)").evaluate_all(LEVEL_WORDS)
    assert any(w["word"] == "CONFIDENTIAL" for w in words), table
    return [w for w in words if w["lines"] != 1 or not w["inside"]]


def test_levels_never_wrap_inside_a_level_name(page, console_server):
    page.set_viewport_size({"width": 900, "height": 900})
    sign_in(page, console_server)
    page.wait_for_selector("#memories td.key:text-is('project')")
    page.click("#memories td.key:text-is('project') >> nth=0")
    page.wait_for_selector("#detail table.lineage tbody tr[data-seq]")
    assert broken_levels(page, "#detail table.lineage") == []
    page.click("#tabs button[data-view=audit]")
    page.wait_for_selector("#audit tbody tr")
    assert broken_levels(page, "#audit") == []


def test_declassify_from_the_page_and_see_it_in_the_register(page, console_server):
    # last in this module: it adds an INTERNAL version of salary-band, which the views above do not expect
    sign_in(page, console_server)
    page.wait_for_selector("#memories tbody tr")
    page.click("#tabs button[data-view=declassify]")
    page.fill("#dc-agent", "main")
    page.fill("#dc-key", "salary-band")
    page.fill("#dc-from", "CONFIDENTIAL")
    page.fill("#dc-to", "INTERNAL")
    page.fill("#dc-reason", "bands are published to the team")
    page.fill("#dc-replacement", "Senior band: see the HR wiki")
    page.click("#declassify-form button[type=submit]")
    page.wait_for_selector("#confirm:not([hidden])")
    assert "salary-band" in page.text_content("#confirm-text")
    page.click("#confirm-yes")
    page.wait_for_selector("#declassify-result:has-text('Declassified')")
    row = page.locator("#declassifications tbody tr").first
    assert "done" in row.text_content() and "CONFIDENTIAL → INTERNAL" in row.text_content()
    _, _, db = console_server
    with sm.open_store(str(db)) as store:
        reader = store.session("main", clearance="INTERNAL")
        reader.escalate("INTERNAL", "check")
        assert reader.get("salary-band").content == "Senior band: see the HR wiki"
    assert page.dialogs == []
