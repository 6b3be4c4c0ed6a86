"""``serve --log-format json``: one JSON object per log line, with the request it belongs to.

Each line has ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message`` and ``request_id`` (the
request being answered, ``null`` outside one; ``http_observe.REQUEST_ID``), plus ``exception`` when
one is logged. Message and traceback pass the credential scrubber here as well as on stratamem's own
loggers (``policy.redact.scrubbed_logger``): uvicorn's and the SDK's lines leave the process too.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from ..policy.redact import redact_secrets
from .http_observe import REQUEST_ID

#: loggers whose lines the JSON handler takes over from uvicorn's own configuration
SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "stratamem", "mcp")


class JsonLines(logging.Formatter):
    """A record as one line of JSON (never spanning lines: newlines in a message are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact_secrets(record.getMessage()),
            "request_id": REQUEST_ID.get(),
        }
        if record.exc_info and record.exc_info[0] is not None:
            line["exception"] = redact_secrets(self.formatException(record.exc_info))
        elif record.exc_text:
            line["exception"] = redact_secrets(record.exc_text)
        return json.dumps(line, ensure_ascii=False)


def use_json_logs(level: str = "info", stream: Any = None) -> logging.Handler:
    """Send the server's log lines to ``stream`` (stderr) as JSON; returns the handler installed.

    Uvicorn is then started without its own logging configuration (``log_config=None``) so its
    loggers reach this handler too.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())
    for name in SERVER_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = []
        logger.propagate = True
    return handler


__all__ = ["JsonLines", "use_json_logs"]
