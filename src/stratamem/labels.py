"""Security labels: a level and a set of compartments (need-to-know), their order and how storage keeps them.

A label is (level, compartments). A ≤ B iff A.level ≤ B.level and A.compartments ⊆ B.compartments: a
session reads a record only when the record's label is ≤ the session's taint label, and every save is
stored at exactly that taint label. A store that never defines a compartment behaves as levels alone
(every label has the empty set).

Storage keeps a label as one integer, ``level | mask << 2``, where bit ``i`` of ``mask`` is the store's
``i``-th defined compartment (``Compartments``, the store's registry; names are never renumbered). A label
with no compartments is therefore the level's own integer, so stores written before compartments existed
read unchanged, and a record with any compartment has an integer above every level: a predicate that
still compares levels alone hides it from everyone (fails closed). Bits 2..62 hold compartments, so a
store defines at most 61 and every label's integer is a non-negative 64-bit value.

The integer order is a total order that extends the label order (a subset's mask is never larger), which
is the rule for shadowing: of the versions of one key a session may read it is shown the one with the
greatest integer — the greatest label when one is above the others; between incomparable labels, the one
whose compartments include the later-defined compartment, then the higher level.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .errors import ClearanceError, ValidationError
from .levels import Level

#: compartments one store may define (bits 2..62 of a label's integer)
MAX_COMPARTMENTS = 61
#: compartments on one label (a record's, a clearance's, a taint's)
MAX_ON_LABEL = 16
#: bits of a label's integer that hold its level
LEVEL_BITS = 3
#: every compartment bit a label's integer can have
ALL_COMPARTMENT_BITS = ((1 << (MAX_COMPARTMENTS + 2)) - 1) & ~LEVEL_BITS

_NAME = re.compile(r"[A-Z][A-Z0-9_-]{0,31}")


def compartment_name(value: object) -> str:
    """A compartment's canonical name: trimmed, upper-case, a letter then letters, digits, ``_`` or ``-``,
    at most 32 characters. Anything else (look-alike letters included) is refused by name."""
    if not isinstance(value, str):
        raise ValidationError(f"a compartment name must be a string, not {type(value).__name__}")
    name = value.strip().upper()
    if not name.isascii() or not _NAME.fullmatch(name):
        shown = repr(value[:40])
        raise ValidationError(
            f"invalid compartment name {shown}: a letter, then letters, digits, '_' or '-', at most 32 (ASCII)"
        )
    return name


def compartment_set(values: Iterable[object] | None) -> frozenset[str]:
    """Canonical names of a label's compartments (at most ``MAX_ON_LABEL``); None is the empty set."""
    if values is None:
        return frozenset()
    if isinstance(values, str):
        values = [v for v in values.split("+") if v.strip()] if "+" in values else [values]
    if not isinstance(values, Iterable):  # a caller's number or flag: refused by name, not a TypeError
        raise ValidationError(
            f"compartments are a collection of names like {{'HR'}}, not {type(values).__name__}"
        )
    names = frozenset(compartment_name(v) for v in values)
    if len(names) > MAX_ON_LABEL:
        raise ValidationError(f"a label holds at most {MAX_ON_LABEL} compartments, not {len(names)}")
    return names


@dataclass(frozen=True, slots=True)
class Label:
    """A level and a set of compartments, ordered as a lattice (``<=`` is the label order, a partial one:
    two labels may be incomparable, so ``max`` is not meaningful — use ``join``)."""

    level: Level
    compartments: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, level: Level | str, compartments: Iterable[object] | None = None) -> Label:
        return cls(Level.parse(level), compartment_set(compartments))

    @classmethod
    def parse(cls, text: object) -> Label:
        """``"CONFIDENTIAL"``, ``"CONFIDENTIAL+HR+FINANCE"`` (any case); a Label passes through."""
        if isinstance(text, Label):
            return text
        if isinstance(text, Level):
            return cls(text)
        if not isinstance(text, str):
            raise ValidationError(
                f"a label is a level and compartments like 'CONFIDENTIAL+HR', not {type(text).__name__}"
            )
        level, *names = text.split("+")
        return cls(Level.parse(level), compartment_set(names))

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Label):
            return NotImplemented
        return self.level <= other.level and self.compartments <= other.compartments

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Label):
            return NotImplemented
        return self <= other and self != other

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Label):
            return NotImplemented
        return other <= self

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Label):
            return NotImplemented
        return other < self

    def join(self, other: Label) -> Label:
        """The least label above both (a taint only ever rises to a join)."""
        return Label(max(self.level, other.level), self.compartments | other.compartments)

    @property
    def name(self) -> str:
        """``LEVEL`` or ``LEVEL+A+B`` (compartments sorted): how labels are printed and parsed."""
        return "+".join([self.level.name, *sorted(self.compartments)])

    def __str__(self) -> str:
        return self.name


class Compartments:
    """One store's compartments: each defined name's bit, fixed once defined (append-only), and the
    integer encoding of labels through them."""

    def __init__(self, bits: Mapping[str, int] | None = None) -> None:
        self._bits: dict[str, int] = dict(bits or {})
        self._names: dict[int, str] = {bit: name for name, bit in self._bits.items()}

    @property
    def names(self) -> tuple[str, ...]:
        """Defined names in definition order."""
        return tuple(sorted(self._bits, key=self._bits.__getitem__))

    def __contains__(self, name: object) -> bool:
        return name in self._bits

    def __len__(self) -> int:
        return len(self._bits)

    def with_names(self, names: Iterable[object]) -> tuple[Compartments, list[str]]:
        """The registry with ``names`` defined (new ones take the next free bits) and the names that are new;
        refused whole when it would pass ``MAX_COMPARTMENTS``."""
        wanted = [compartment_name(n) for n in names]
        added = [n for n in dict.fromkeys(wanted) if n not in self._bits]
        if len(self._bits) + len(added) > MAX_COMPARTMENTS:
            raise ValidationError(
                f"a store defines at most {MAX_COMPARTMENTS} compartments; it has {len(self._bits)} "
                f"and {len(added)} more were asked for"
            )
        bits = dict(self._bits)
        for name in added:
            bits[name] = len(bits)
        return Compartments(bits), added

    def mask(self, names: Iterable[str]) -> int:
        """The bit mask of defined names (refuses an undefined one, naming what is defined)."""
        mask = 0
        for name in names:
            bit = self._bits.get(name)
            if bit is None:
                raise ValidationError(
                    f"unknown compartment {name!r}: the operator has not defined it in this store"
                )
            mask |= 1 << bit
        return mask

    def encode(self, label: Label) -> int:
        """The integer storage keeps for ``label``."""
        return int(label.level) | (self.mask(label.compartments) << 2)

    def decode(self, code: int) -> Label:
        """The label of a stored integer. A bit no defined name holds means the store changed under this
        registry (another process defined more): the caller reloads; refused here rather than guessed."""
        return Label(Level(code & LEVEL_BITS), self.compartments_of(code))

    def compartments_of(self, code: int) -> frozenset[str]:
        mask, names, bit = code >> 2, [], 0
        while mask:
            if mask & 1:
                name = self._names.get(bit)
                if name is None:
                    raise KeyError(bit)
                names.append(name)
            mask >>= 1
            bit += 1
        return frozenset(names)


NO_COMPARTMENTS = Compartments()


def level_of(code: int) -> Level:
    """The level of a stored label integer."""
    return Level(int(code) & LEVEL_BITS)


def reads(taint: int, code: int) -> bool:
    """Whether a session at stored taint ``taint`` may read a record stored at ``code`` (label order on the
    integers: level not above, every compartment bit within the taint's)."""
    return (code & LEVEL_BITS) <= (taint & LEVEL_BITS) and (code & ~taint & ALL_COMPARTMENT_BITS) == 0


def join(a: int, b: int) -> int:
    """The stored integer of the join of two stored labels (higher level, union of compartments)."""
    return max(a & LEVEL_BITS, b & LEVEL_BITS) | ((a | b) & ALL_COMPARTMENT_BITS)


def visible_params(taint: int) -> dict[str, int]:
    """Parameters of ``visible_sql`` for a session at stored taint ``taint``: ``top`` (the taint's own
    integer, a range bound every readable label is within), ``deny`` (compartment bits outside the taint)
    and ``lvl`` (its level)."""
    return {"top": int(taint), "deny": ALL_COMPARTMENT_BITS & ~int(taint), "lvl": int(taint) & LEVEL_BITS}


def visible_args(taint: int) -> tuple[int, int, int]:
    """``visible_params`` in the order ``visible_sql`` names them (top, deny, lvl): for positional
    placeholders."""
    p = visible_params(taint)
    return p["top"], p["deny"], p["lvl"]


def visible_sql(column: str, top: str = ":top", deny: str = ":deny", lvl: str = ":lvl") -> str:
    """SQL true iff the label stored in ``column`` is ≤ the taint whose ``visible_params`` are bound to the
    placeholders. ``column <= top`` keeps an index's range scan (it is implied by the other two)."""
    return f"({column} <= {top} AND ({column} & {deny}) = 0 AND ({column} & 3) <= {lvl})"


def within_sql(a: str, b: str) -> str:
    """SQL true iff the label stored in ``a`` is ≤ the label stored in ``b`` (two columns or expressions):
    ``a``'s level not above ``b``'s and every compartment bit of ``a`` among ``b``'s. The integer test
    ``a <= b`` alone is not the label order (``PUBLIC+HR`` is below ``PUBLIC+FINANCE`` as integers)."""
    return f"({a} <= {b} AND ({a} & 3) <= ({b} & 3) AND ({a} & ~({b}) & {ALL_COMPARTMENT_BITS}) = 0)"


def outside_clearance() -> ClearanceError:
    """The refusal of a label outside a session's clearance: one message whether a level above it or a
    compartment it lacks (defined or not) was asked for, so the answer tells a session nothing about the
    store's compartments."""
    return ClearanceError("cannot raise the session's taint: the label asked for is outside its clearance")
