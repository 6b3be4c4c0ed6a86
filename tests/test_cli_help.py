"""Every command's ``--help`` is plain text: no reStructuredText markup from the docstrings it is built from."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from stratamem.cli import cli


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))


@pytest.mark.parametrize("path", list(_commands(cli)), ids=lambda p: " ".join(p) or "stratamem")
def test_help_has_no_rest_markup(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "``" not in result.output and "`" not in result.output, result.output
    assert ":func:" not in result.output and ":class:" not in result.output
