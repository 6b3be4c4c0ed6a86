"""The Markdown store's file format and layout: pure functions, no file system.

Layout under the store directory (one folder per agent and label, so the
operating system can keep labels apart too)::

    <agent>/<LABEL>/MEMORY.md                 category "core"
    <agent>/<LABEL>/memory/YYYY-MM-DD.md      categories "daily" and "conversation" (UTC creation day)
    <agent>/<LABEL>/<category>.md             any other category
    .stratamem/                               the sidecar index (hidden: never an agent folder)

``<LABEL>`` is the label's name (``stratamem.labels.Label.name``): the level
alone (``CONFIDENTIAL``) for a memory without compartments, else the level and
its compartments sorted (``CONFIDENTIAL+FINANCE+HR``). Only that canonical
spelling is a label folder (``label_folder``), so one label has one folder; a
name past 200 bytes (many long compartments) becomes ``~`` plus a hash, and
the folder holds a ``.label`` file naming the label (``long_label``).

A folder or file name keeps ``A-Z a-z 0-9 _ -`` and writes every other
character as ``%XX`` (UTF-8 bytes), so no name is hidden, ``..`` or a path; a
name whose encoding would pass 200 bytes becomes ``~`` plus a hash (an agent
folder then holds an ``.agent`` file naming the agent). A category spelled
like ``memory`` is encoded so it never meets ``MEMORY.md`` on a case-blind disk.

Each memory is one section::

    ## the key

    - category: core
    - tags: pref, ui
    - created: 2026-01-01T00:00:00.001000+00:00
    - updated: 2026-01-01T00:00:00.002000+00:00
    - lineage: 5f0c...
    - session: 9d1e...
    - expires: 2026-02-01T00:00:00.000000+00:00
    - occurred: 1969-07-20T20:17:40.000000+00:00
    - context: the previous turn of the conversation

    The content, exactly as saved.

``occurred`` (when the thing happened) is written only when it differs from
``created`` (a section without it happened when it was created); ``context``
(the text that situates the memory, part of its embedding) only when there is
one, and a section without it has none.

A key, category or session that is not plain text (edge spaces, a leading
``"`` or ``[``, a trailing ``#``, control characters) is written as a JSON
string; tags with commas as a JSON list. In the body, a line starting with
backslashes then ``##`` gets one more backslash, which the parser removes, so
content holding headings round-trips exactly; the body ends with one blank line.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from ...errors import ValidationError
from ...labels import Label, level_of
from ...levels import Level
from ...models import Memory, context_of, situated
from ...validation import check_category, check_content, check_context, check_key, check_tags

CORE_FILE = "MEMORY.md"
DAILY_DIR = "memory"
DAILY_CATEGORIES = ("daily", "conversation")
LONG_PREFIX = "~"
AGENT_FILE = ".agent"
LABEL_FILE = ".label"
SIDECAR_DIR = ".stratamem"
MAX_SEGMENT_BYTES = 200
FIELDS = ("category", "tags", "created", "updated", "lineage", "session", "expires", "occurred", "context")
_SAFE = re.compile(r"[A-Za-z0-9_-]")
_DATE_FILE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\.md")
_META = re.compile(r"- ([a-z]+):(?: (.*))?")
_ESCAPED = re.compile(r"\\*##")
_LONG_LABEL = re.compile(r"~[0-9a-f]{40}")


class FormatError(ValidationError):
    """A file that does not parse; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.reason = message


# --------------------------------------------------------------------------- names


def encode_segment(name: str) -> str:
    """A folder/file name for ``name`` that is never hidden, never a path, and decodes back exactly."""
    out = "".join(
        ch if _SAFE.fullmatch(ch) else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in name
    )
    if out.lower() == "memory":
        out = f"%{ord(out[0]):02X}" + out[1:]
    if len(out) > MAX_SEGMENT_BYTES:
        out = LONG_PREFIX + hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]
    return out


def decode_segment(segment: str) -> str | None:
    """The name a segment encodes, or None when it is not one ``encode_segment`` writes (long form: None too)."""
    if segment.startswith(LONG_PREFIX) or not segment:
        return None
    raw = bytearray()
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "%":
            try:
                raw.append(int(segment[i + 1 : i + 3], 16))
            except ValueError:
                return None
            i += 3
        else:
            raw.extend(ch.encode("utf-8"))
            i += 1
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return name if encode_segment(name) == segment else None


@functools.lru_cache(maxsize=4096)
def label_folder(name: str) -> Label:
    """The label a folder name stands for; ``ValidationError`` unless it is a label's canonical name.

    Checked before the name is ever part of a path: ASCII, no separator, no
    ``..``, a level's name, then each compartment a valid name (at most
    ``labels.MAX_ON_LABEL``), and the label's own spelling (sorted, upper case).
    """
    shown = repr(name[:60])
    if not name.isascii() or not name or any(ch in name for ch in "/\\\0") or ".." in name:
        raise ValidationError(f"label folder {shown} is not a label's name (ASCII, no separators, no '..')")
    level, plus, _ = name.partition("+")
    if level not in Level.__members__:
        raise ValidationError(f"unknown level folder {shown}; levels are {', '.join(Level.__members__)}")
    try:
        label = Label.parse(name) if plus else Label(Level[level])
    except ValidationError as exc:
        raise ValidationError(f"label folder {shown} is not a label: {exc.message}") from None
    if label.name != name:
        raise ValidationError(f"label folder {shown} must be spelt {label.name!r} (compartments sorted)")
    return label


def folder_of(label: Level | Label) -> str:
    """The folder of a label, its name checked as a label folder before it becomes part of a path (a name
    past ``MAX_SEGMENT_BYTES``: the long form, ``~`` and a hash of the name)."""
    label = Label.parse(label)
    if not label.compartments:
        return label.level.name
    name = label_folder(label.name).name
    if len(name) <= MAX_SEGMENT_BYTES:
        return name
    return LONG_PREFIX + hashlib.sha256(name.encode("ascii")).hexdigest()[:40]


def is_long_label(name: str) -> bool:
    """Whether a folder name is a long label folder's (``~`` and 40 hex digits)."""
    return _LONG_LABEL.fullmatch(name) is not None


def long_label(folder: str, named: str) -> Label:
    """The label a long label folder stands for: the one its ``.label`` file names, if that label's folder
    is this one (so a hand-made ``.label`` cannot move a folder's files to another label)."""
    label = label_folder(named.strip())
    if folder_of(label) != folder:
        raise ValidationError(f"{LABEL_FILE} names a label whose folder is not {folder!r}")
    return label


def file_for(agent_dir: str, label: Level | Label, category: str, created_at: datetime) -> str:
    """The relative path of the file a memory version lives in (a bare level is the label without compartments)."""
    base = f"{agent_dir}/{folder_of(label)}/"
    if category == "core":
        return base + CORE_FILE
    if category in DAILY_CATEGORIES:
        return base + f"{DAILY_DIR}/{created_at.astimezone(UTC):%Y-%m-%d}.md"
    return base + encode_segment(category) + ".md"


@dataclass(frozen=True, slots=True)
class Place:
    """What a file's path says: its agent folder, label folder, and the category its sections default to.

    The label itself is the walk's (``files.Walk.labels``): a long label folder names it in a file.
    """

    agent_dir: str
    label_dir: str
    default_category: str | None


@functools.lru_cache(maxsize=65536)
def place_of(rel: str) -> Place:
    """Parse a relative path of the layout; ``ValidationError`` says what is wrong with it."""
    parts = rel.split("/")
    if len(parts) not in (3, 4) or not parts[-1].endswith(".md"):
        raise ValidationError("not a memory file of the layout <agent>/<LABEL>/<name>.md")
    agent_dir, label = parts[0], parts[1]
    if not is_long_label(label):
        label_folder(label)
    if len(parts) == 4:
        if parts[2] != DAILY_DIR or not _valid_day(parts[3]):
            raise ValidationError(f"daily files live in {DAILY_DIR}/YYYY-MM-DD.md")
        return Place(agent_dir, label, "daily")
    name = parts[2][:-3]
    if name == CORE_FILE[:-3]:
        return Place(agent_dir, label, "core")
    return Place(agent_dir, label, decode_segment(name))


def _valid_day(name: str) -> bool:
    match = _DATE_FILE.fullmatch(name)
    if not match:
        return False
    try:
        date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- values


def _plain(text: str) -> bool:
    return (
        bool(text)
        and text == text.strip()
        and text[0] not in '"['
        and not text.endswith("#")
        and not any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in text)
    )


def encode_value(text: str) -> str:
    return text if _plain(text) else json.dumps(text, ensure_ascii=False)


def decode_value(text: str, line: int, what: str) -> str:
    if not text.startswith('"'):
        return text.strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(line, f"{what} is not a valid JSON string ({exc.msg})") from None
    if not isinstance(value, str):
        raise FormatError(line, f"{what} must be a string")
    return value


def _encode_tags(tags: tuple[str, ...]) -> str:
    if all(_plain(t) and "," not in t for t in tags):
        return ", ".join(tags)
    return json.dumps(list(tags), ensure_ascii=False)


def _decode_tags(text: str, line: int) -> tuple[str, ...]:
    if text.startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormatError(line, f"tags are not a valid JSON list ({exc.msg})") from None
        if not isinstance(value, list):
            raise FormatError(line, "tags must be a list")
    else:
        value = [t.strip() for t in text.split(",") if t.strip()]
    try:
        return check_tags(value)
    except ValidationError as exc:
        raise FormatError(line, exc.message) from None


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _parse_time(text: str, line: int, what: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise FormatError(line, f"{what} is not an ISO 8601 time: {text[:40]!r}") from None
    if moment.tzinfo is None:
        raise FormatError(line, f"{what} must carry a timezone (e.g. +00:00)")
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise FormatError(line, f"{what} is outside the representable range of times") from None


# --------------------------------------------------------------------------- render


def header(agent: str, label: Level | Label, title: str) -> str:
    return (
        f"# {encode_value(agent)} · {Label.parse(label).name} · {title}\n\n"
        '<!-- stratamem memory file: one "## key" section per memory. Edit, add or remove sections; '
        'keep the "- field:" lines. -->\n\n'
    )


def render_section(memory: Memory) -> str:
    meta = [f"- category: {encode_value(memory.category)}"]
    if memory.tags:
        meta.append(f"- tags: {_encode_tags(memory.tags)}")
    meta += [
        f"- created: {_time(memory.created_at)}",
        f"- updated: {_time(memory.updated_at)}",
        f"- lineage: {encode_value(memory.lineage_id)}",
    ]
    if memory.session_id is not None:
        meta.append(f"- session: {encode_value(memory.session_id)}")
    if memory.expires_at is not None:
        meta.append(f"- expires: {_time(memory.expires_at)}")
    if memory.occurred_at != memory.created_at:
        meta.append(f"- occurred: {_time(memory.occurred_at)}")
    if (context := context_of(memory)) is not None:
        meta.append(f"- context: {encode_value(context)}")
    body = "\n".join("\\" + ln if _ESCAPED.match(ln) else ln for ln in memory.content.split("\n"))
    return f"## {encode_value(memory.key)}\n\n" + "\n".join(meta) + "\n\n" + body + "\n\n"


def sort_key(memory: Memory) -> tuple[Any, ...]:
    """Daily files read in time order; the others by key."""
    if memory.category in DAILY_CATEGORIES:
        return (memory.created_at, memory.key)
    return (datetime.min.replace(tzinfo=UTC), memory.key)


def render_file(agent: str, label: Level | Label, title: str, memories: list[Memory]) -> str:
    return header(agent, label, title) + "".join(render_section(m) for m in sorted(memories, key=sort_key))


# --------------------------------------------------------------------------- parse


@dataclass(frozen=True, slots=True)
class Section:
    """One parsed section; fields the file leaves out are None (filled in by whoever applies it)."""

    key: str
    content: str
    line: int
    category: str | None
    tags: tuple[str, ...]
    created_at: datetime | None
    updated_at: datetime | None
    lineage_id: str | None
    session_id: str | None
    expires_at: datetime | None
    occurred_at: datetime | None = None
    context: str | None = None

    def memory(
        self,
        agent: str,
        code: int,
        default_category: str,
        now: datetime,
        compartments: frozenset[str] = frozenset(),
    ) -> Memory:
        """The record this section stores at the label whose stored integer is ``code`` (a bare ``Level`` is
        its own code); ``compartments``: the label's names, when the caller knows them (the sidecar's rows
        carry the code alone, so a hand edit compared with them leaves them out)."""
        created = self.created_at or self.updated_at or now
        return situated(
            Memory(
                key=self.key,
                content=self.content,
                level=level_of(code),
                label_code=int(code),
                compartments=compartments,
                tags=self.tags,
                category=self.category or default_category,
                agent_id=agent,
                session_id=self.session_id,
                created_at=created,
                updated_at=self.updated_at or created,
                lineage_id=self.lineage_id or str(uuid.uuid4()),
                expires_at=self.expires_at,
                occurred_at=self.occurred_at or created,
            ),
            self.context,
        )


def _is_heading(line: str) -> bool:
    return line == "##" or line.startswith("## ")


def _preamble_ok(line: str) -> bool:
    text = line.strip()
    return (
        not text
        or (text.startswith("#") and not text.startswith("##"))
        or (text.startswith("<!--") and text.endswith("-->"))
    )


def parse_file(text: str, max_content_bytes: int) -> list[Section]:
    """Every section of a file; the first problem raises ``FormatError`` with its line."""
    lines = text.split("\n")
    starts = [i for i, ln in enumerate(lines) if _is_heading(ln)]
    limit = starts[0] if starts else len(lines)
    for i in range(limit):
        if not _preamble_ok(lines[i]):
            raise FormatError(i + 1, "text outside a section; each memory starts with a '## key' line")
    sections: list[Section] = []
    seen: dict[str, int] = {}
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        section = _parse_section(lines, start, end, max_content_bytes)
        if section.key in seen:
            raise FormatError(
                start + 1,
                f"key {section.key!r} appears twice in this file (first at line {seen[section.key]})",
            )
        seen[section.key] = start + 1
        sections.append(section)
    return sections


def _parse_section(lines: list[str], start: int, end: int, max_content_bytes: int) -> Section:
    line_no = start + 1
    key = decode_value(lines[start][3:], line_no, "the key")
    try:
        key = check_key(key)
    except ValidationError as exc:
        raise FormatError(line_no, exc.message) from None
    i = start + 1
    if i < end and lines[i] in ("", "\r"):  # "\r": a file an editor turned to CRLF
        i += 1
    fields: dict[str, tuple[str, int]] = {}
    while i < end:
        match = _META.fullmatch(lines[i].removesuffix("\r"))
        if not match or match[1] not in FIELDS:
            if fields and lines[i].startswith("- ") and match:
                raise FormatError(i + 1, f"unknown field {match[1]!r}; fields are {', '.join(FIELDS)}")
            break
        if match[1] in fields:
            raise FormatError(i + 1, f"field {match[1]!r} given twice")
        fields[match[1]] = (match[2] or "", i + 1)
        i += 1
    if fields and i < end and lines[i] in ("", "\r"):
        i += 1
    body_lines = [ln[1:] if _ESCAPED.match(ln) and ln.startswith("\\") else ln for ln in lines[i:end]]
    # The raw text up to the next heading (or the end) ends with the body, a newline and one blank line.
    body = "\n".join(body_lines) + ("\n" if end < len(lines) else "")
    body = body[:-2] if body.endswith("\n\n") else body[:-1] if body.endswith("\n") else body
    try:
        content = check_content(body, max_content_bytes)
    except ValidationError as exc:
        raise FormatError(line_no, f"section {key!r}: {exc.message}") from None
    return _section(key, content, line_no, fields)


def _section(key: str, content: str, line_no: int, fields: dict[str, tuple[str, int]]) -> Section:
    def get(name: str) -> tuple[str, int] | None:
        value = fields.get(name)
        return value if value and value[0].strip() else None

    def checked(name: str, check: Callable[[str], str | None]) -> str | None:
        """A text field through its save check; a refusal is a ``FormatError`` at the field's line."""
        if (raw := get(name)) is None:
            return None
        value = decode_value(raw[0], raw[1], name)
        try:
            return check(value)
        except ValidationError as exc:
            raise FormatError(raw[1], exc.message) from None

    category = checked("category", check_category)
    times = {
        name: _parse_time(v[0], v[1], name) if (v := get(name)) else None
        for name in ("created", "updated", "expires", "occurred")
    }
    lineage = decode_value(v[0], v[1], "lineage") if (v := get("lineage")) else None
    session = decode_value(v[0], v[1], "session") if (v := get("session")) else None
    tags = _decode_tags(t[0], t[1]) if (t := get("tags")) else ()
    context = checked("context", check_context)
    return Section(
        key,
        content,
        line_no,
        category,
        tags,
        times["created"],
        times["updated"],
        lineage,
        session,
        times["expires"],
        times["occurred"],
        context,
    )
