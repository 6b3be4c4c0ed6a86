"""The turn's errors: stable codes, the core class each is, and the CLI exit code that follows from it."""

from __future__ import annotations

import pytest

from stratamem import errors as core
from stratamem.turn import errors as turn


@pytest.mark.parametrize(
    ("cls", "code", "core_class", "exit_code"),
    [
        (turn.ValidationError, "VALIDATION_ERROR", core.ValidationError, 2),
        (turn.PolicyBlockedError, "POLICY_BLOCKED", core.PolicyBlocked, 4),
        (turn.NotFoundError, "NOT_FOUND", core.NotFound, 1),
        (turn.LimitExceededError, "LIMIT_EXCEEDED", core.StratamemError, 2),
        (turn.TurnStateError, "TURN_STATE", core.StratamemError, 2),
        (turn.TurnError, "TURN_ERROR", core.StratamemError, 2),
    ],
)
def test_each_turn_error_has_its_code_class_and_exit_code(cls, code, core_class, exit_code):
    error = cls("what went wrong")
    assert isinstance(error, turn.TurnError) and isinstance(error, core_class)
    assert (error.code, cls.default_code, error.exit_code) == (code, code, exit_code)
    assert str(error) == f"{code}: what went wrong"
    assert error.to_dict() == {"error": {"code": code, "message": "what went wrong"}}


def test_a_given_code_wins_and_the_builtin_bases_still_match():
    assert turn.ValidationError("bad", code="BAD_ORIGIN").code == "BAD_ORIGIN"
    assert isinstance(turn.ValidationError("bad"), ValueError)
    assert isinstance(turn.NotFoundError("gone"), LookupError)
