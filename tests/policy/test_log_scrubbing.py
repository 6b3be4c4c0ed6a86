"""Server and observer logs pass the credential scrubber: a traceback quotes what it failed on."""

from __future__ import annotations

import logging

import pytest

from stratamem.policy.redact import REDACTED, scrubbed_logger

SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z-Q7rS0tU3vW6"
BCRYPT = "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW"


@pytest.mark.parametrize("name", ["stratamem.server", "stratamem.turn.observe"])
def test_an_unexpected_errors_message_and_traceback_are_scrubbed(name, caplog):
    logger = scrubbed_logger(name)
    with caplog.at_level(logging.ERROR, logger=name):
        try:
            raise ValueError(f"could not parse {{'api_key': '{SECRET}', 'hash': '{BCRYPT}'}}")
        except ValueError:
            logger.exception("unexpected error in POST /v1/x?token=%s", SECRET)
    assert caplog.records, "nothing was logged"
    text = caplog.text + "".join(r.exc_text or "" for r in caplog.records)
    assert SECRET not in text and BCRYPT not in text
    assert REDACTED in text and "ValueError" in text and "Traceback" in text


def test_the_server_modules_log_through_the_scrubber():
    from stratamem.server import app, rest, tool_workers
    from stratamem.turn import observe

    for logger in (app.logger, rest.logger, tool_workers.logger, observe._log):
        assert any(type(f).__name__ == "_ScrubRecords" for f in logger.filters), logger.name


def test_scrubbing_twice_adds_one_filter():
    first = scrubbed_logger("stratamem.test.once")
    second = scrubbed_logger("stratamem.test.once")
    assert first is second and len(first.filters) == 1
