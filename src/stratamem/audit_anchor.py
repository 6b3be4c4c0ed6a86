"""Audit anchors: a checkpoint of the hash chain kept outside the store it protects.

The chain (``audit.py``) proves that no event was edited, removed or reordered
*before the last event it still holds*, and the store's head record catches
events cut off the end — unless whoever cuts them also rewrites the head,
which anyone who can delete rows can do. An anchor closes that gap: the
operator records (sequence, hash) of the newest event somewhere the store's
writers cannot reach (another machine, a ticket, a WORM bucket), and
verification against it fails when any event up to that sequence is missing
or differs. An optional HMAC key (a file kept apart from the anchor) lets the
anchor itself travel through places that are not trusted: without the key, a
forged anchor cannot be made to match.

File format: one JSON object, ``{"stratamem_audit_anchor": 1, "seq": N,
"hash": "<64 hex>", "time": "<ISO 8601>", "hmac": "<64 hex>"}`` (``hmac``
only with a key).
"""

from __future__ import annotations

import hashlib
import hmac as hmac_lib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import ValidationError

FORMAT = 1
_HEX64 = re.compile(r"[0-9a-f]{64}")
MAX_ANCHOR_BYTES = 4096
MIN_KEY_BYTES = 16


@dataclass(frozen=True, slots=True)
class AuditAnchor:
    """The newest event's sequence number and hash, at ``time`` (ISO 8601), when the anchor was taken."""

    seq: int
    hash: str
    time: str = ""

    def mac(self, key: bytes) -> str:
        message = f"stratamem-audit-anchor:{FORMAT}:{self.seq}:{self.hash}".encode()
        return hmac_lib.new(key, message, hashlib.sha256).hexdigest()

    def dumps(self, key: bytes | None = None) -> str:
        body: dict[str, object] = {
            "stratamem_audit_anchor": FORMAT,
            "seq": self.seq,
            "hash": self.hash,
            "time": self.time,
        }
        if key is not None:
            body["hmac"] = self.mac(key)
        return json.dumps(body, sort_keys=True) + "\n"

    @classmethod
    def loads(cls, text: str, key: bytes | None = None) -> AuditAnchor:
        """Parse an anchor; with ``key`` its HMAC must be present and match (else ``ValidationError``)."""
        try:
            body = json.loads(text)
        except (ValueError, RecursionError):
            raise ValidationError("the audit anchor is not JSON") from None
        if not isinstance(body, dict) or body.get("stratamem_audit_anchor") != FORMAT:
            raise ValidationError("not a stratamem audit anchor (format 1)")
        seq, digest, time = body.get("seq"), body.get("hash"), body.get("time", "")
        if type(seq) is not int or seq < 0 or not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise ValidationError("the audit anchor needs a sequence number >= 0 and a 64-digit hex hash")
        anchor = cls(seq, digest, time if isinstance(time, str) else "")
        if key is not None:
            given = body.get("hmac")
            if not isinstance(given, str) or not hmac_lib.compare_digest(given, anchor.mac(key)):
                raise ValidationError(
                    "the audit anchor's HMAC does not match this key: the anchor was altered, "
                    "or was made with another key or none"
                )
        return anchor


def read_anchor(path: str | Path, key: bytes | None = None) -> AuditAnchor:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_ANCHOR_BYTES + 1)
    except OSError as exc:
        raise ValidationError(f"cannot read the audit anchor {str(path)!r}: {exc.strerror}") from None
    if len(raw) > MAX_ANCHOR_BYTES:
        raise ValidationError("the audit anchor file is too large to be one")
    return AuditAnchor.loads(raw.decode("utf-8", "replace"), key)


def read_key(path: str | Path) -> bytes:
    """An HMAC key file: its raw bytes (e.g. ``head -c 32 /dev/urandom > anchor.key``), at least 16."""
    try:
        key = Path(path).read_bytes()
    except OSError as exc:
        raise ValidationError(f"cannot read the anchor key {str(path)!r}: {exc.strerror}") from None
    if len(key) < MIN_KEY_BYTES:
        raise ValidationError(f"the anchor key must hold at least {MIN_KEY_BYTES} bytes")
    return key
