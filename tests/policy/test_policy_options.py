"""``Policy``'s own settings: a bad value is the library's ValidationError (stable code, exit 2), naming what
is allowed, never a bare ValueError from deep inside."""

from __future__ import annotations

import pytest

from stratamem.errors import ValidationError
from stratamem.policy.engine import Policy
from stratamem.policy.scanner import ScanMode


@pytest.mark.parametrize("mode", ["QUARANTINE", "quarantined", "", None, 1])
def test_an_unknown_scan_mode_names_the_allowed_values(mode: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Policy(scan_mode=mode)  # type: ignore[arg-type]
    assert caught.value.code == "VALIDATION_ERROR"
    assert "scan_mode" in caught.value.message
    assert "reject, quarantine, off" in caught.value.message


@pytest.mark.parametrize("mode", [*ScanMode, "reject", "quarantine", "off"])
def test_every_scan_mode_as_the_config_writes_it(mode: object) -> None:
    assert Policy(scan_mode=mode).scan_mode == ScanMode(mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0, -1, "5", True, float("nan")])
def test_a_bad_timeout_is_a_validation_error(timeout: object) -> None:
    with pytest.raises(ValidationError, match="timeout"):
        Policy(timeout=timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize("read_only", ["false", 1, None])
def test_read_only_must_be_a_boolean(read_only: object) -> None:
    """A string "false" was truthy: a policy meant writable silently became read-only (or the reverse)."""
    with pytest.raises(ValidationError, match="read_only"):
        Policy(read_only=read_only)  # type: ignore[arg-type]


def test_replace_keeps_the_checked_values() -> None:
    policy = Policy(scan_mode="quarantine", timeout=2.5)
    assert policy.replace(read_only=True).scan_mode is ScanMode.QUARANTINE
