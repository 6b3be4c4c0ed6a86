"""The optional related section of the memory-context block (issue 12, item 7)."""

from __future__ import annotations

import stratamem as sm
from stratamem.turn import render_memory_context
from stratamem.turn.context import BLOCK_CLOSE, ContextConfig


def _store():
    store = sm.open_store(":memory:")
    s = store.session("a")
    s.save("billing-migration", "the billing migration starts in March")
    g = s.graph
    g.capture("billing-migration", "project", "move billing to the new ledger")
    g.capture("payroll-audit", "project", "audit of payroll", observations=["owned by Sam"])
    g.capture("Sam", "person")
    g.relate("billing-migration", "payroll-audit", "depends_on")
    g.relate("Sam", "payroll-audit", "leads")
    return store, s


def test_off_by_default_and_bounded_when_on():
    store, s = _store()
    plain = render_memory_context(s, "when does the billing migration start", "interactive")
    assert "Related:" not in plain and "billing-migration" in plain
    on = render_memory_context(
        s, "when does the billing migration start", "interactive", config=ContextConfig(related_entries=2)
    )
    assert (
        "Related:\n- billing-migration --depends_on--> payroll-audit: audit of payroll; owned by Sam\n" in on
    )
    assert on.endswith(BLOCK_CLOSE + "\n\n")
    tight = render_memory_context(
        s,
        "when does the billing migration start",
        "interactive",
        config=ContextConfig(related_entries=5, max_total_chars=120),
    )
    assert len(tight) <= 120
    store.close()


def test_related_section_respects_the_taint():
    store, s = _store()
    high = store.session("a")
    high.escalate("CONFIDENTIAL", "test")
    high.graph.capture("secret-vendor", "vendor")
    high.graph.relate("billing-migration", "secret-vendor", "pays")
    low = render_memory_context(
        s, "billing migration", "interactive", config=ContextConfig(related_entries=5)
    )
    assert "secret-vendor" not in low
    assert "secret-vendor" in render_memory_context(
        high, "billing migration", "interactive", config=ContextConfig(related_entries=5)
    )
    store.close()
