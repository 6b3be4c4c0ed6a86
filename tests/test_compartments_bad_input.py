"""Hostile and mistaken input to compartments (``stratamem.labels``): every refusal is one of the contract's
stable codes, and nothing is written — the store's export, its compartments, every table's rows and its
audit log are as before, but for the refusal's own audit event where one is recorded (a raise of the
taint refused by the clearance is audited as ``escalate``/``refused``)."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import FakeClock

import stratamem as sm
from stratamem import ClearanceError, ValidationError
from stratamem.labels import MAX_COMPARTMENTS, MAX_ON_LABEL, Label

DEFINED = ("HR", "FIN")
#: look-alikes of defined names: Cyrillic Н and Е, Greek Ι, dotted İ, a fullwidth letter, a zero-width joiner
HOMOGLYPHS = ["НR", "FІN", "ΙT", "İR", "ＨR", "H\u200dR"]
MALFORMED = [
    *HOMOGLYPHS,
    "",
    "   ",
    "a b",
    "X" * 33,
    "HR/../x",
    "../HR",
    "HR\x00",
    "1HR",
    "_HR",
    "HR!",
    "HR+FIN",
]
NOT_STRINGS = [5, 3.5, None, b"HR", ["HR"], object()]


@pytest.fixture
def place(tmp_path):
    store = sm.open_store(str(tmp_path / "s.db"), clock=FakeClock())
    store.define_compartments(*DEFINED)
    writer = store.session("a", compartments={"HR"})
    writer.escalate("CONFIDENTIAL", "setup")
    writer.enter("HR", "setup")
    writer.save("k", "apple river")
    yield store, tmp_path / "s.db"
    store.close()


def state(store: sm.Store, path) -> dict:
    """Everything a refusal must leave as it was: every table's rows (the audit log and its head apart),
    the registry, the log's events, the export (read last: an export is itself an audited operator act).

    The log is read from its table: ``Store.audit_events`` does not list events under compartment labels
    yet, and a refused ``enter`` is recorded under one."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"'))) for t in tables if t != "audit"}
        rows["meta"] = [r for r in rows["meta"] if "audit_head" not in r]
        audit = conn.execute("SELECT seq, operation, outcome, hash FROM audit ORDER BY seq").fetchall()
    finally:
        conn.close()
    return {
        "rows": rows,
        "compartments": store.compartments.current(fresh=True).names,
        "audit": audit,
        "export": [m.to_dict() for m in store.export()],
    }


def assert_refused(place, call, error: type[Exception], code: str, *, audited: bool | None = False):
    """``call(store)`` raises ``error`` with ``code`` and writes nothing; ``audited``: its refusal event is
    recorded (True), is not (False), or may be (None)."""
    store, path = place
    before = state(store, path)
    with pytest.raises(error) as caught:
        call(store)
    assert caught.value.code == code
    after = state(store, path)
    # the log only grows: by the export ``state`` made, then by the refusal's event if any
    assert after["audit"][: len(before["audit"])] == before["audit"]
    new_events = [(op, outcome) for _, op, outcome, _ in after["audit"][len(before["audit"]) :]]
    assert new_events[:1] == [("export", "ok")]
    if audited is None:
        audited = len(new_events) > 1
    assert new_events[1:] == ([("escalate", "refused")] if audited else [])
    assert after | {"audit": None} == before | {"audit": None}
    return caught.value


# ---------------------------------------------------------------------------- unknown names


def test_a_session_cleared_for_an_undefined_compartment_is_refused(place):
    error = assert_refused(
        place, lambda s: s.session("a", compartments={"NOPE"}), ValidationError, "VALIDATION_ERROR"
    )
    assert "NOPE" in error.message


def test_a_clearance_label_naming_an_undefined_compartment_is_refused(place):
    assert_refused(
        place, lambda s: s.session("a", clearance="CONFIDENTIAL+NOPE"), ValidationError, "VALIDATION_ERROR"
    )


def cleared(store: sm.Store) -> sm.Session:
    return store.session("a", clearance="CONFIDENTIAL+HR")


def escalated(store: sm.Store) -> tuple[str, str]:
    """The refusal of a level above the clearance: what every compartment refusal must look like."""
    session = cleared(store)
    with pytest.raises(ClearanceError) as caught:
        session.escalate("RESTRICTED", "probe")
    return caught.value.code, caught.value.message


@pytest.mark.parametrize("name", ["NOPE", "FIN", "fin", " FIN "])
def test_entering_a_compartment_outside_the_clearance_is_refused_like_a_level_above_it(place, name):
    """Undefined (NOPE) or defined but not cleared (FIN): one answer, the one a level above the clearance
    gets, so the answer tells nothing of which compartments the store defines."""
    store, _ = place
    expected = escalated(store)
    session = cleared(store)
    error = assert_refused(
        place, lambda s: session.enter(name, "probe"), ClearanceError, "POLICY_BLOCKED", audited=None
    )
    assert (error.code, error.message) == expected
    assert session.label == Label(sm.Level.PUBLIC)


@pytest.mark.parametrize("name", ["FIN", " fin "])
def test_a_refused_enter_of_a_defined_compartment_is_audited_like_a_refused_escalation(place, name):
    """An operator sees a session ask for a compartment outside its clearance as it sees one ask for a
    level above it: one ``escalate`` event, outcome ``refused``."""
    session = cleared(place[0])
    assert_refused(
        place, lambda s: session.enter(name, "probe"), ClearanceError, "POLICY_BLOCKED", audited=True
    )


# ---------------------------------------------------------------------------- too many


def test_seventeen_compartments_on_one_label_are_refused(place):
    store, _ = place
    names = [f"C{i}" for i in range(MAX_ON_LABEL + 1)]
    store.define_compartments(*names)  # every one defined: the count alone is refused
    for call in (
        lambda s: s.session("a", compartments=names),
        lambda s: s.session("a", clearance="PUBLIC+" + "+".join(names)),
    ):
        error = assert_refused(place, call, ValidationError, "VALIDATION_ERROR")
        assert f"at most {MAX_ON_LABEL}" in error.message
    with pytest.raises(ValidationError):
        Label.parse("PUBLIC+" + "+".join(names))
    with pytest.raises(ValidationError):
        Label.of("PUBLIC", names)


def test_sixteen_on_a_label_are_accepted(place):
    store, _ = place
    names = [f"C{i}" for i in range(MAX_ON_LABEL)]
    store.define_compartments(*names)
    session = store.session("a", compartments=names)
    for name in names:
        session.enter(name, "t")
    assert session.compartments == frozenset(names)
    assert session.save("wide", "apple").compartments == frozenset(names)


def test_a_store_defines_at_most_sixty_one(place):
    store, _ = place
    more = [f"C{i}" for i in range(MAX_COMPARTMENTS - len(DEFINED) + 1)]  # one past the limit
    assert_refused(place, lambda s: s.define_compartments(*more), ValidationError, "VALIDATION_ERROR")
    assert store.define_compartments(*more[:-1])[-1] == more[-2]  # up to the limit is fine
    assert_refused(place, lambda s: s.define_compartments(more[-1]), ValidationError, "VALIDATION_ERROR")
    assert store.define_compartments("HR") == store.compartments.current().names  # defined again: a no-op


# ---------------------------------------------------------------------------- malformed names


@pytest.mark.parametrize("name", MALFORMED + NOT_STRINGS, ids=repr)
def test_a_malformed_name_is_refused_everywhere(place, name):
    store, _ = place
    session = cleared(store)
    for call in (
        lambda s: s.define_compartments(name),
        lambda s: s.define_compartments("LEGAL", name),  # all or nothing: LEGAL is not defined either
        lambda s: s.session("a", compartments=[name]),
        lambda s: session.enter(name, "probe"),
    ):
        assert_refused(place, call, ValidationError, "VALIDATION_ERROR")
    assert "LEGAL" not in store.compartments.current(fresh=True)


@pytest.mark.parametrize("value", [5, 3.5, object(), True], ids=repr)
def test_compartments_that_are_not_a_collection_are_refused(place, value):
    assert_refused(place, lambda s: s.session("a", compartments=value), ValidationError, "VALIDATION_ERROR")


# ---------------------------------------------------------------------------- labels


def test_a_level_above_the_clearance_is_refused_and_audited(place):
    store, _ = place
    session = cleared(store)
    assert_refused(
        place,
        lambda s: session.escalate("RESTRICTED", "probe"),
        ClearanceError,
        "POLICY_BLOCKED",
        audited=True,
    )
    assert session.label == Label(sm.Level.PUBLIC)


def test_a_defined_compartment_outside_the_clearance_changes_nothing(place):
    store, _ = place
    session = cleared(store)
    session.enter("HR", "in")
    before = session.label
    with pytest.raises(ClearanceError):
        session.enter("FIN", "probe")
    assert session.label == before
    assert session.save("after", "x").label == Label(sm.Level.PUBLIC, frozenset({"HR"}))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "+",
        "+HR",
        "CONFIDENTIAL+",
        "CONFIDENTIAL++HR",
        "SECRET+HR",
        "CONFIDENTIAL HR",
        "CONFIDENTIAL+HR/../x",
        "CONFIDENTIAL+НR",
        "CONFIDENTIAL+" + "X" * 33,
        "x" * 100_000,
        "CONFIDENTIAL+" + "+".join(["HR"] * 100_000),  # one name repeated: still one compartment
        5,
        None,
        b"CONFIDENTIAL",
        ["CONFIDENTIAL", "HR"],
    ],
    ids=lambda t: repr(t)[:40],
)
def test_label_parse_refuses_garbage_with_a_validation_error(text):
    if isinstance(text, str) and text.count("+HR") == 100_000:
        assert Label.parse(text) == Label(sm.Level.CONFIDENTIAL, frozenset({"HR"}))
        return
    with pytest.raises(ValidationError) as caught:
        Label.parse(text)
    assert caught.value.code == "VALIDATION_ERROR"
    assert len(caught.value.message) < 300  # a hostile value is not echoed whole


@pytest.mark.parametrize("text", ["", "CONFIDENTIAL+", "SECRET+HR", "CONFIDENTIAL+НR", "CONFIDENTIAL+NOPE"])
def test_a_garbage_clearance_label_opens_no_session(place, text):
    assert_refused(place, lambda s: s.session("a", clearance=text), ValidationError, "VALIDATION_ERROR")
