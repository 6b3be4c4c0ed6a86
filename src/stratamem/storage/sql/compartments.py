"""The store's compartments (``stratamem.labels.Compartments``) in SQL written once for both engines.

One row per defined name with the bit it holds in every label's integer. Names are only ever added
(a bit, once given, keeps its meaning for every record stored with it), by an operator act audited as
``compartments.define``. Bodies run in operator transactions (``Store.define_compartments``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...audit import operator_draft
from ...labels import Compartments

if TYPE_CHECKING:
    from ..transaction import Tx


def read_body(tx: Tx[Any]) -> Compartments:
    """The registry as stored."""
    rows = tx.conn.execute("SELECT name, bit FROM compartments").fetchall()
    return Compartments({name: int(bit) for name, bit in rows})


def define_body(tx: Tx[Any], names: Iterable[object]) -> Compartments:
    """Define ``names`` (those not yet defined take the next bits); audited when any is new."""
    registry, added = read_body(tx).with_names(names)
    if added:
        insert = tx.dialect.sql("INSERT INTO compartments (name, bit) VALUES (?, ?)")
        for name in added:
            tx.conn.execute(insert, (name, registry.mask([name]).bit_length() - 1))
        tx.append(operator_draft("compartments.define", detail={"added": added, "defined": len(registry)}))
    return registry
