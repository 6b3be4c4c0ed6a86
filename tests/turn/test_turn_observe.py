from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratamem.turn import (
    EventBus,
    EventLog,
    HistoryTrimmed,
    MemoryRecall,
    MemoryStore,
    PolicyDecision,
    ToolCall,
    scrub_text,
    scrub_value,
)
from stratamem.turn.observe import event_attributes
from stratamem.turn.scrub import DEFAULT_MAX_CHARS, REDACTED, is_secret_key

# Fake credentials, assembled at run time so no scanner mistakes them for real ones.
A36 = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
CORPUS: dict[str, str] = {
    "openai": "sk-proj-" + A36,
    "anthropic": "sk-ant-api03-" + A36 + "-xyz",
    "github_classic": "ghp_" + A36,
    "github_fine_grained": "github_pat_11ABCDEFG0_" + A36,
    "gitlab": "glpat-" + A36[:20],
    "aws_access_key": "AKIA" + "IOSFODNN7EXAMPLE",
    "slack_bot": "xoxb-" + "123456789012-1234567890123-" + A36[:24],
    "slack_user": "xoxp-" + "123456789012-" + A36[:24],
    "slack_webhook": "https://hooks.slack.com/services/" + "T00000000/B00000000/" + A36[:24],
    "google": "AIza" + A36[:35].ljust(35, "x"),
    "stripe": "sk_live_" + A36[:24],
    "huggingface": "hf_" + A36[:34],
    "npm": "npm_" + A36,
    "sendgrid": "SG." + A36[:22] + "." + A36 + "abcdefg",
    "jwt": "eyJhbGciOiJIUzI1NiJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA"
    + A36
    + "\n"
    + A36
    + "\n-----END RSA PRIVATE KEY-----",
}
# Secrets only recognisable by the name they are given.
NAMED: dict[str, str] = {
    "password": "correct-horse-battery",
    "api_key": "k9" + A36,
    "client_secret": "cs_" + A36,
    "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "session_token": "FwoGZXIvYXdzE" + A36,
    "db_passwd": "hunter2hunter2",
}


def contexts(secret: str) -> list[str]:
    return [
        secret,
        f"call failed: {secret}",
        f"Authorization: Bearer {secret}",
        json.dumps({"text": f"here {secret} there"}),
    ]


def named_contexts(key: str, secret: str) -> list[str | dict[str, Any]]:
    return [
        f"{key}={secret}",
        f"{key}: {secret}",
        f'{{"{key}": "{secret}"}}',
        f"curl -d '{key}={secret}&x=1' https://example.test",
        f'log line {{\\"{key}\\": \\"{secret}\\"}}',
        {key: secret, "other": 1},
        {"nested": [{"headers": {key.upper(): secret}}]},
    ]


def all_event_text(event: Any) -> str:
    return repr(event) + json.dumps(event_attributes(event), ensure_ascii=False)


def events_carrying(payload: str | dict[str, Any]) -> list[Any]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return [
        ToolCall(tool_name="http", arguments=payload, success=False, error=text),
        MemoryRecall(origin="interactive", entry_count=0, success=False, error=text),
        MemoryStore(key="k", category="core", success=False, error=text),
        PolicyDecision(action="read", target=text, allowed=False, reason=text),
    ]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_bare_credentials_never_reach_an_event(name: str) -> None:
    secret = CORPUS[name]
    for payload in contexts(secret):
        for event in events_carrying(payload):
            assert secret not in all_event_text(event), (name, payload)
            assert "[REDACTED]" in all_event_text(event)


@pytest.mark.parametrize("key", sorted(NAMED))
def test_named_credentials_never_reach_an_event(key: str) -> None:
    secret = NAMED[key]
    for payload in named_contexts(key, secret):
        for event in events_carrying(payload):
            assert secret not in all_event_text(event), (key, payload)


def test_corpus_has_at_least_twelve_formats() -> None:
    assert len(CORPUS) + len(NAMED) >= 12 and len(CORPUS) >= 12


def test_pair_values_keep_a_four_character_prefix() -> None:
    assert scrub_text("password=correct-horse-battery") == "password=corr*[REDACTED]"
    assert scrub_text('"api_key": "abcdefghijklmnop"') == '"api_key": "abcd*[REDACTED]"'
    assert scrub_text("token: short") == "token: [REDACTED]"  # short values go whole
    assert scrub_text("Authorization: Bearer abcdefghijklmnop") == "Authorization: Bearer abcd*[REDACTED]"


def test_json_fields_named_like_secrets_become_redacted() -> None:
    assert scrub_value({"password": "x", "user": "bob", "n": 3}) == {
        "password": REDACTED,
        "user": "bob",
        "n": 3,
    }
    assert json.loads(scrub_value('{"Authorization": "Basic Ym9iOnNlY3JldA==", "q": 1}')) == {
        "Authorization": REDACTED,
        "q": 1,
    }


def test_harmless_text_is_left_alone() -> None:
    text = "author=Jane max_tokens=512 category: daily sk-short ghp_tooShort"
    assert scrub_text(text) == text
    assert not is_secret_key("author") and is_secret_key("X-Api-Key") and is_secret_key("SESSION_ID")


@given(st.text(max_size=200))
def test_scrub_is_idempotent(text: str) -> None:
    once = scrub_text(text)
    assert scrub_text(once) == once


def test_events_are_bounded() -> None:
    event = ToolCall(tool_name="t" * 5000, arguments={"q": "z" * 5000}, success=True, error="e" * 5000)
    for f in fields(event):
        value = getattr(event, f.name)
        if isinstance(value, str):
            assert len(value) <= DEFAULT_MAX_CHARS


def test_observers_receive_events_and_failures_are_contained() -> None:
    log = EventLog()

    def broken(event: object) -> None:
        raise RuntimeError("observer bug")

    bus = EventBus([broken, log], tracer=None)
    unsubscribe = bus.subscribe(log)
    event = HistoryTrimmed(
        session_id="s", messages_dropped=3, turns_dropped=1, tokens_before=10, tokens_after=5
    )
    bus.emit(event)
    unsubscribe()
    bus.emit(event)
    assert log.events == [event, event, event]


class FakeSpan:
    def __init__(
        self, sink: list[tuple[str, dict[str, Any]]], name: str, attributes: Mapping[str, Any]
    ) -> None:
        sink.append((name, dict(attributes)))

    def end(self) -> None:
        pass


class FakeTracer:
    def __init__(self) -> None:
        self.spans: list[tuple[str, dict[str, Any]]] = []

    def start_span(self, name: str, *, attributes: Mapping[str, Any]) -> FakeSpan:
        return FakeSpan(self.spans, name, attributes)


def test_events_become_spans_when_a_tracer_is_available() -> None:
    tracer = FakeTracer()
    EventBus(tracer=tracer).emit(ToolCall(tool_name="shell", arguments={"token": "abc"}, success=True))
    ((name, attrs),) = tracer.spans
    assert name == "stratamem.tool.call"
    assert attrs["stratamem.tool_name"] == "shell"
    assert attrs["stratamem.arguments"] == '{"token": "[REDACTED]"}'
    assert attrs["stratamem.success"] is True


def test_without_opentelemetry_the_bus_still_works() -> None:
    # opentelemetry-api is optional; with or without it, emitting must not fail
    EventBus().emit(MemoryRecall(origin="cron", entry_count=1, success=True))


HOSTILE = ["tokentoken", "a.", "ab://", "eyJ-", '\\"', '"', "[IMAGE:", 'password=\\"x', "a://b:", "sk-", "./"]


@pytest.mark.parametrize("fragment", HOSTILE)
def test_hostile_repetitions_are_handled(fragment: str) -> None:
    # Each pattern must scan linearly; a backtracking regression shows up as a slow test.
    text = fragment * (20_000 // len(fragment))
    assert scrub_text(scrub_text(text)) == scrub_text(text)
    event = ToolCall(tool_name="t", arguments=text, success=True)
    assert len(event.arguments) <= DEFAULT_MAX_CHARS


def test_events_are_built_only_when_someone_listens(store) -> None:
    """Building an event scrubs every field: skipped when no observer and no recording tracer would get it."""
    from stratamem.turn import ToolCallRequest, ToolResult
    from stratamem.turn.observe import EventBus, EventLog, listening

    assert not listening(None)
    assert not EventBus(tracer=None).listening
    assert EventBus(tracer=object()).listening  # a tracer the caller gives is assumed to record
    log = EventLog()
    bus = EventBus([log], tracer=None)
    assert bus.listening
    turn = store.session("main").turn("a question long enough to recall", events=bus)
    turn.record_tool_calls([ToolCallRequest("c1", "lookup", "{}")])
    turn.record_tool_result("c1", "lookup", ToolResult(True, "out"))
    assert {type(e).__name__ for e in log.events} >= {"MemoryRecall", "ToolCall"}
