from datetime import timedelta

import pytest

from stratamem import Level, NotFound, ValidationError


def test_level_is_always_the_live_taint(store):
    s = store.session("main")
    assert s.save("a", "public fact").level is Level.PUBLIC
    s.escalate(Level.INTERNAL, "x")
    assert s.save("b", "internal fact").level is Level.INTERNAL


def test_same_level_save_updates_and_keeps_created_at(store):
    s = store.session("main")
    first = s.save("k", "one", tags=["t1"])
    second = s.save("k", "two", tags=["t2"], category="daily")
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert second.lineage_id == first.lineage_id
    got = s.get("k")
    assert (got.content, got.tags, got.category) == ("two", ("t2",), "daily")
    assert len(s.list()) == 1


def test_versions_per_level_and_shadowing_is_the_same_everywhere(store):
    low = store.session("main")
    low.save("pref", "tea with milk", tags=["drink"])
    high = store.session("main")
    high.escalate(Level.CONFIDENTIAL, "x")
    high.save("pref", "coffee black", tags=["drink"])
    # The PUBLIC view still has its own version.
    assert low.get("pref").content == "tea with milk"
    # The CONFIDENTIAL view sees exactly one version: the highest.
    assert high.get("pref").content == "coffee black"
    assert [m.content for m in high.list()] == ["coffee black"]
    assert [m.content for m in high.list(tag="drink")] == ["coffee black"]
    assert [h.memory.content for h in high.search("tea coffee milk black")] == ["coffee black"]
    assert [h.memory.content for h in high.search("")] == ["coffee black"]


def test_delete_is_own_level_only_and_unshadows(store):
    low = store.session("main")
    low.save("pref", "tea")
    high = store.session("main")
    high.escalate(Level.CONFIDENTIAL, "x")
    high.save("pref", "coffee")
    deleted = high.delete("pref")
    assert deleted.content == "coffee" and deleted.level is Level.CONFIDENTIAL
    assert high.get("pref").content == "tea"
    assert [h.memory.content for h in high.search("tea")] == ["tea"]
    with pytest.raises(NotFound) as err:
        high.delete("pref")  # the PUBLIC version is not at the session's level
    assert "CONFIDENTIAL" in err.value.message and "PUBLIC" not in err.value.message
    assert low.get("pref").content == "tea"


def test_soft_deleted_is_hidden_from_every_read(store):
    s = store.session("main")
    s.save("gone", "ephemeral zebra", tags=["z"])
    s.delete("gone")
    assert s.get("gone") is None
    assert s.list() == [] and s.list(tag="z") == []
    assert s.search("zebra") == [] and s.search("") == []
    s.save("gone", "back again")
    assert s.get("gone").content == "back again"


def test_ttl_expiry_behaves_as_deleted(make_store, clock):
    store = make_store(clock=clock)
    s = store.session("main")
    s.save("short", "a fleeting walrus", ttl=60)
    s.save("long", "a lasting walrus", ttl=timedelta(hours=1))
    assert {h.memory.key for h in s.search("walrus")} == {"short", "long"}
    clock.advance(120)
    assert s.get("short") is None
    assert [m.key for m in s.list()] == ["long"]
    assert [h.memory.key for h in s.search("walrus")] == ["long"]
    with pytest.raises(NotFound):
        s.delete("short")


def test_expired_higher_version_stops_shadowing(make_store, clock):
    store = make_store(clock=clock)
    low = store.session("main")
    low.save("k", "durable")
    high = store.session("main")
    high.escalate(Level.INTERNAL, "x")
    high.save("k", "temporary", ttl=10)
    assert high.get("k").content == "temporary"
    clock.advance(20)
    assert high.get("k").content == "durable"
    assert [h.memory.content for h in high.search("durable temporary")] == ["durable"]


@pytest.mark.parametrize(
    "key, content, tags, message",
    [
        ("", "x", (), "key must not be empty"),
        ("k" * 257, "x", (), "257 characters"),
        ("bad\x00key", "x", (), "control characters"),
        ("bad\nkey", "x", (), "control characters"),
        ("k", "", (), "content must not be empty"),
        ("k", "x" * (64 * 1024 + 1), (), "limit is 65536 bytes"),
        ("k", "x", (1,), "tags must be strings"),
        ("k", "x", "single-string", "list of strings"),
        ("k", "\udcff bytes", (), "not valid UTF-8"),
        (None, "x", (), "key must be a string"),
    ],
)
def test_validation_errors_write_nothing(store, key, content, tags, message):
    s = store.session("main")
    s.save("keep", "safe")
    before = store.audit_events()
    with pytest.raises(ValidationError) as err:
        s.save(key, content, tags=tags)
    assert message in err.value.message and err.value.code == "VALIDATION_ERROR"
    assert [m.key for m in s.list()] == ["keep"]
    assert len(store.audit_events()) == len(before) + 1  # only the list above


def test_odd_but_valid_text_round_trips(store):
    s = store.session("main")
    content = "quotes ' \" ` and NUL \x00 and tabs\t\nnewlines, emoji 🦀, RTL \u202e"
    s.save('it\'s "quoted"', content)
    assert s.get('it\'s "quoted"').content == content


def test_bad_ttl_refused(store):
    s = store.session("main")
    for ttl in (0, -1, float("nan"), "10", True):
        with pytest.raises(ValidationError):
            s.save("k", "v", ttl=ttl)
    assert s.list() == []


def test_content_limit_is_configurable(make_store):
    store = make_store(max_content_bytes=10)
    s = store.session("main")
    with pytest.raises(ValidationError):
        s.save("k", "01234567890")
    assert s.save("k", "0123456789").content == "0123456789"


def test_agent_scoping(store):
    alice = store.session("alice")
    bob = store.session("bob")
    reader = store.session("carol", peers=("alice",))
    alice.save("shared", "alice's note")
    bob.save("shared", "bob's note")
    bob.save("bob-only", "private to bob")
    reader.save("own", "carol's own")
    assert reader.get("shared").agent_id == "alice"
    assert {(m.agent_id, m.key) for m in reader.list()} == {("carol", "own"), ("alice", "shared")}
    assert reader.get("bob-only") is None
    assert [h.memory.agent_id for h in reader.search("note")] == ["alice"]
    # Peers are read-only: deletes touch only the own agent.
    with pytest.raises(NotFound):
        reader.delete("shared")
    assert alice.get("shared") is not None
    # Own agent first for get.
    reader.save("shared", "carol's version")
    assert reader.get("shared").agent_id == "carol"
    assert [(m.agent_id, m.key) for m in reader.list()] == [
        ("carol", "own"),
        ("carol", "shared"),
        ("alice", "shared"),
    ]
