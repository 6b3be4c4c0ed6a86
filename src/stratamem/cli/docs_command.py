"""``stratamem docs``: where this install's documentation is.

A checkout holds the site's sources (``docs/``, ``mkdocs.yml``) and, once built, the site in ``site/``; an
installed wheel ships no documentation (the source distribution does), so the command then says where to
read it instead of failing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .. import shapes
from .root import Context, cli, run

# src/stratamem/cli/docs_command.py -> the checkout's root, when this runs from a checkout
CHECKOUT = Path(__file__).resolve().parents[3]


def locate(root: Path = CHECKOUT) -> dict[str, Any]:
    """The built site's index page, the sources, and what to do next; paths are ``None`` when absent."""
    site = root / "site" / "index.html"
    sources = root / "mkdocs.yml"
    if site.is_file():
        hint = f"open {site.as_uri()} (rebuild with `mkdocs build` in {root})"
    elif sources.is_file():
        hint = f"not built yet: in {root} run pip install -e '.[docs]' && mkdocs build (or mkdocs serve)"
    else:
        hint = (
            "this install has no documentation files (the wheel ships none; the source distribution has docs/"
            " and mkdocs.yml); a running `stratamem serve` describes its API at /docs"
        )
    return {
        "site": str(site) if site.is_file() else None,
        "sources": str(root / "docs") if sources.is_file() else None,
        "hint": hint,
    }


@cli.command("docs")
@click.pass_obj
def docs(ctx: Context) -> None:
    """Print where the documentation site is, or how to build it."""

    def action() -> None:
        found = locate()
        if ctx.as_json:
            click.echo(shapes.dumps(found))
            return
        lines = [f"site     {found['site'] or '-'}", f"sources  {found['sources'] or '-'}", found["hint"]]
        click.echo(shapes.printable("\n".join(lines)))

    run(ctx, action)
